import type { SecretFetcher, SecretValue } from '../../../lambda/config/secrets-manager';
import { secretsManagerReader } from '../../../lambda/crypto/keys';
import { secretsManagerValueReader } from '../../../lambda/targets/credentials';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:x-AbCdEf';
const bytes = Uint8Array.from([0xff, 0x00, 0x41, 0x80, ...Buffer.from('key material')]);

function fetcher(values: Partial<Record<'AWSCURRENT' | 'AWSPREVIOUS', SecretValue>>): SecretFetcher {
  return async (_id, stage) => values[stage];
}

describe('one Secrets Manager read, decoded by what the secret is for', () => {
  test('a text secret is the same text for a credential and for key material', async () => {
    const read = fetcher({ AWSCURRENT: { text: 'token-1' } });
    await expect(secretsManagerValueReader(read)(ARN)).resolves.toBe('token-1');
    await expect(secretsManagerReader(read)(ARN, 'AWSCURRENT')).resolves.toBe('token-1');
  });

  test('a binary secret is UTF-8 text as a credential and whole bytes (base64) as key material', async () => {
    const read = fetcher({ AWSCURRENT: { bytes } });
    await expect(secretsManagerValueReader(read)(ARN)).resolves.toBe(Buffer.from(bytes).toString('utf8'));
    const key = await secretsManagerReader(read)(ARN, 'AWSCURRENT');
    expect(Buffer.from(key ?? '', 'base64')).toEqual(Buffer.from(bytes));
  });

  test('a missing previous key stage is no value; a credential without a value is an error', async () => {
    const read = fetcher({});
    await expect(secretsManagerReader(read)(ARN, 'AWSPREVIOUS')).resolves.toBeUndefined();
    await expect(secretsManagerValueReader(read)(ARN)).rejects.toThrow('the secret has no value');
  });
});
