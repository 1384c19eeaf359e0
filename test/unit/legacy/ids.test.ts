import { targetCallIdOf } from '../../../lambda/legacy/ids';
import { exactNumberId } from '../../../lambda/protocol/request-id';

/**
 * The id a client's request is forwarded under (legacy/ids.ts): derived from the client's own id, so
 * a cancellation arriving on any instance names the same call at the target without any state.
 */
describe("the target's id of a client's call", () => {
  it('is the same on every instance for the same client id (derived, not random)', () => {
    expect(targetCallIdOf(7)).toBe(targetCallIdOf(7));
    expect(targetCallIdOf('abc')).toBe(targetCallIdOf('abc'));
  });

  it('keeps a number id and a string id of the same text apart', () => {
    expect(targetCallIdOf(7)).toBe('c.n.7');
    expect(targetCallIdOf('7')).toBe('c.s.7');
    expect(targetCallIdOf(7)).not.toBe(targetCallIdOf('7'));
  });

  it('derives a number id kept as its JSON text from its exact digits, as the number itself would be', () => {
    // 1e400 does not survive JSON.parse: the id keeps its text, and the target sees those digits.
    const huge = exactNumberId(Number.POSITIVE_INFINITY, '1e400');
    expect(targetCallIdOf(huge)).toBe('c.n.1e400');
    const plain = exactNumberId(12, '12');
    expect(plain).toBe(12);
    expect(targetCallIdOf(plain)).toBe('c.n.12');
  });

  it('never collides with the key of the session GET stream among the calls of a session', () => {
    expect(targetCallIdOf('GET')).toBe('c.s.GET');
    expect(targetCallIdOf('GET')).not.toBe('GET');
  });
});
