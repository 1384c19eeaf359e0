import { ConsentLinks } from '../../../lambda/connections/consent-links';
import { SealedBox } from '../../../lambda/crypto/sealed-box';
import { clockAt } from '../../support/fake-clock';

/**
 * Why a consent link does not open decides what its page tells the person holding it: an expired
 * link, one sealed with a key the gateway no longer holds (a restart of a local gateway, a rotation
 * that retired the key, another gateway's link), and one that is not a link at all or was altered.
 */

const KEY_A = 'consent-links-key-a-of-at-least-32-characters';
const KEY_B = 'consent-links-key-b-of-at-least-32-characters';
const KEY_C = 'consent-links-key-c-of-at-least-32-characters';
const TTL_MS = 600_000;

/** The links' clock (epoch ms), moved by the test. */
let now = Date.UTC(2026, 0, 1);

const linksUnder = (current: string, previous?: string) =>
  new ConsentLinks(
    SealedBox.fromSecrets({ current, ...(previous ? { previous } : {}) }),
    TTL_MS,
    clockAt(() => now),
  );

describe('a consent link that does not open says why', () => {
  const underA = linksUnder(KEY_A);
  const sealed = underA.seal(underA.create('alice', 'github', 'session-1'));

  it('opens under the key that sealed it, and during a rotation under the previous key', () => {
    expect(underA.open(sealed)).toMatchObject({ principal: 'alice', target: 'github' });
    expect(linksUnder(KEY_B, KEY_A).open(sealed)).toMatchObject({ principal: 'alice' });
  });

  it('sealed with a key the gateway no longer holds (rotated out, or another key): unknown-key', () => {
    expect(linksUnder(KEY_C, KEY_B).open(sealed)).toBe('unknown-key');
    expect(linksUnder(KEY_B).open(sealed)).toBe('unknown-key');
  });

  it('altered, cut short or not a link at all: invalid', () => {
    const [format, kid, iv, body] = sealed.split('.') as [string, string, string, string];
    const altered = `${format}.${kid}.${iv}.${body.slice(0, 10)}${body[10] === 'A' ? 'B' : 'A'}${body.slice(11)}`;
    expect(underA.open(altered)).toBe('invalid');
    expect(underA.open(sealed.slice(0, sealed.length - 40))).toBe('invalid');
    expect(underA.open('not-a-link')).toBe('invalid');
    expect(underA.open(undefined)).toBe('invalid');
    // A link-shaped text with a malformed key id is no link of any gateway.
    expect(underA.open(`${format}.not a kid.${iv}.${body}`)).toBe('invalid');
  });

  it('past its expiry: expired (also under the previous key)', () => {
    now += TTL_MS;
    expect(underA.open(sealed)).toBe('expired');
    expect(linksUnder(KEY_B, KEY_A).open(sealed)).toBe('expired');
  });
});
