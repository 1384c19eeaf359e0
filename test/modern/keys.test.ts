import { parseConfig } from '../../lambda/config/schema';
import { keySecretsFromConfig, resolveKeySecrets, type SecretReader } from '../../lambda/crypto/keys';
import { SealedBox } from '../../lambda/crypto/sealed-box';
import { SILENT } from './helpers';

/** Where the requestState keys come from (no AWS here: Secrets Manager is a fake reader). */

const CURRENT = 'c'.repeat(40);
const PREVIOUS = 'p'.repeat(40);
const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gw-state-AbCdEf';

function reader(values: Partial<Record<'AWSCURRENT' | 'AWSPREVIOUS', string>>, calls: string[] = []): SecretReader {
  return async (id, stage) => {
    calls.push(`${id}:${stage}`);
    return values[stage];
  };
}

test('configured keys win and nothing is read', async () => {
  const calls: string[] = [];
  const config = parseConfig({ requestStateKeys: { current: CURRENT }, requestStateSecretArn: ARN });
  expect(await resolveKeySecrets(config, SILENT, {}, reader({ AWSCURRENT: PREVIOUS }, calls))).toEqual({
    current: CURRENT,
  });
  expect(calls).toEqual([]);
});

test('Secrets Manager: AWSCURRENT seals, AWSPREVIOUS still opens (rotation)', async () => {
  const calls: string[] = [];
  const secrets = await resolveKeySecrets(
    parseConfig({ requestStateSecretArn: ARN }),
    SILENT,
    {},
    reader({ AWSCURRENT: CURRENT, AWSPREVIOUS: PREVIOUS }, calls),
  );
  expect(secrets).toEqual({ current: CURRENT, previous: PREVIOUS });
  expect(calls).toEqual([`${ARN}:AWSCURRENT`, `${ARN}:AWSPREVIOUS`]);
  const old = SealedBox.fromSecrets({ current: PREVIOUS }).seal({ n: 1 });
  expect(SealedBox.fromSecrets(secrets).open(old)).toEqual({ n: 1 });
});

test('the ARN may come from the environment; a JSON secret names both keys', async () => {
  const json = JSON.stringify({ current: CURRENT, previous: PREVIOUS });
  const secrets = await resolveKeySecrets(
    parseConfig({}),
    SILENT,
    { GATEWAY_REQUEST_STATE_SECRET_ARN: ARN },
    reader({ AWSCURRENT: json }),
  );
  expect(secrets).toEqual({ current: CURRENT, previous: PREVIOUS });
});

test('no key anywhere: a random one, with a warning', async () => {
  const warnings: string[] = [];
  const secrets = await resolveKeySecrets(
    parseConfig({}),
    { ...SILENT, warn: (m: string) => void warnings.push(m) } as never,
    {},
    reader({}),
  );
  expect(secrets.current.length).toBeGreaterThanOrEqual(32);
  expect(warnings[0]).toContain('random');
});

test('keys without I/O: the configured ones, else a random one with a warning', () => {
  const warnings: string[] = [];
  const logger = { ...SILENT, warn: (m: string) => void warnings.push(m) } as never;
  const configured = { current: CURRENT };
  expect(keySecretsFromConfig(parseConfig({ requestStateKeys: configured }), logger)).toEqual(configured);
  expect(warnings).toEqual([]);
  expect(keySecretsFromConfig(parseConfig({}), logger).current.length).toBeGreaterThanOrEqual(32);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain('random');
});

test('a too short or missing secret fails the cold start with a message naming it', async () => {
  await expect(
    resolveKeySecrets(parseConfig({ requestStateSecretArn: ARN }), SILENT, {}, reader({ AWSCURRENT: 'short' })),
  ).rejects.toThrow(/shorter than 32/);
  await expect(resolveKeySecrets(parseConfig({ requestStateSecretArn: ARN }), SILENT, {}, reader({}))).rejects.toThrow(
    /no AWSCURRENT/,
  );
  expect(() => parseConfig({ requestStateKeys: { current: 'short' } })).toThrow(/requestStateKeys.current/);
  expect(() => parseConfig({ confirmTools: ['no-separator'] })).toThrow(/confirmTools/);
  expect(() => parseConfig({ targets: [{ name: 'a', url: 'http://x', era: 'future' }] })).toThrow(/targets.0.era/);
});

test('SealedBox refuses anything it did not seal', () => {
  const box = SealedBox.fromSecrets({ current: CURRENT });
  const sealed = box.seal({ a: 1 });
  expect(box.open(sealed)).toEqual({ a: 1 });
  expect(SealedBox.fromSecrets({ current: PREVIOUS }).open(sealed)).toBeUndefined();
  expect(box.open(sealed.replace(/^gw1/, 'gw2'))).toBeUndefined();
  expect(box.open(`${sealed}x`)).toBeUndefined();
  expect(box.open(undefined)).toBeUndefined();
});
