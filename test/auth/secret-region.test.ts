import { createServer } from 'node:http';
import { secretsManagerReader } from '../../lambda/crypto/keys';
import { secretsManagerValueReader } from '../../lambda/targets/credentials';
import { listen } from '../support/loopback';

/**
 * A secret named by ARN is read in the region of its ARN, so a configuration with `secretArn` works
 * on a machine without a default region (`npm start` on a laptop) and for a secret in another
 * region. The real AWS SDK signs the request; a loopback stand-in for Secrets Manager records the
 * region of the signature's credential scope and answers GetSecretValue.
 */

const ARN = 'arn:aws:secretsmanager:ap-southeast-2:123456789012:secret:gateway/demo-AbCdEf';
const ENV_KEYS = [
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_PROFILE',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_ENDPOINT_URL_SECRETS_MANAGER',
];
const saved = Object.fromEntries(ENV_KEYS.map((key) => [key, process.env[key]]));
const regions: string[] = [];
let server: { base: string; close(): Promise<void> };

beforeAll(async () => {
  server = await listen(
    createServer((req, res) => {
      const scope = /Credential=[^/]+\/\d{8}\/([^/]+)\/secretsmanager\//.exec(req.headers.authorization ?? '');
      regions.push(scope?.[1] ?? 'unsigned');
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify({ ARN, Name: 'gateway/demo', SecretString: 'the-value', VersionId: 'v1' }));
      });
    }),
  );
  // No region anywhere: not in the environment, not in a profile.
  for (const key of ENV_KEYS) delete process.env[key];
  process.env.AWS_CONFIG_FILE = '/nonexistent/aws-config';
  process.env.AWS_SHARED_CREDENTIALS_FILE = '/nonexistent/aws-credentials';
  process.env.AWS_ACCESS_KEY_ID = 'AKIDEXAMPLE';
  process.env.AWS_SECRET_ACCESS_KEY = 'secret-example';
  process.env.AWS_ENDPOINT_URL_SECRETS_MANAGER = server.base;
});

afterAll(async () => {
  for (const key of ENV_KEYS) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
  await server.close();
});

beforeEach(() => {
  regions.length = 0;
});

test('a target credential with secretArn is read in the region its ARN names, without a default region', async () => {
  await expect(secretsManagerValueReader()(ARN)).resolves.toBe('the-value');
  expect(regions).toEqual(['ap-southeast-2']);
});

test('the requestState key secret is read in the region its ARN names, without a default region', async () => {
  await expect(secretsManagerReader()(ARN, 'AWSCURRENT')).resolves.toBe('the-value');
  expect(regions).toEqual(['ap-southeast-2']);
});
