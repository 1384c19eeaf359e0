import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
// Ajv (and its formats) come with @modelcontextprotocol/sdk, which validates tool schemas with it.
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { checkConfigText } from '../../lib/config/check';
import { CONFIG_JSON_SCHEMA_PATH, gatewayConfigJsonSchema } from '../../lib/config/json-schema';
import { readGatewayContext } from '../../lib/context';

/**
 * The committed JSON Schema of the configuration file is the one the zod schema generates, and every
 * example in examples/ is valid where it is used: configuration files against that JSON Schema (as an
 * editor checks them) and against the gateway's own check, CDK context files against the stack's
 * context rules, client configurations as JSON.
 */

const ROOT = join(__dirname, '..', '..');
const committed = JSON.parse(readFileSync(join(ROOT, CONFIG_JSON_SCHEMA_PATH), 'utf8'));
const filesIn = (folder: string) =>
  readdirSync(join(ROOT, 'examples', folder))
    .filter((name) => name.endsWith('.json'))
    .map((name) => join(ROOT, 'examples', folder, name));
const relative = (file: string) => file.slice(ROOT.length + 1);

test(`${CONFIG_JSON_SCHEMA_PATH} is what the zod schema generates (npm run config-schema rewrites it)`, () => {
  expect(committed).toEqual(gatewayConfigJsonSchema());
});

describe('examples/config', () => {
  const ajv = new Ajv({ allErrors: true, strict: true });
  addFormats(ajv);
  const validate = ajv.compile(committed);

  test('there are examples', () => {
    expect(filesIn('config').length).toBeGreaterThanOrEqual(3);
  });

  test.each(filesIn('config').map(relative))('%s names the schema, matches it, and passes --check-config', (name) => {
    const file = join(ROOT, name);
    const text = readFileSync(file, 'utf8');
    const document = JSON.parse(text);
    expect(resolve(dirname(file), document.$schema)).toBe(join(ROOT, CONFIG_JSON_SCHEMA_PATH));
    expect({ valid: validate(document), errors: validate.errors ?? null }).toEqual({ valid: true, errors: null });
    expect(checkConfigText(text)).toMatchObject({ ok: true });
  });

  test('the JSON Schema refuses what the gateway refuses (an unknown key, a bad value)', () => {
    expect(validate({ targets: [{ name: 'docs', url: 'https://docs.example.com/mcp', hedaers: {} }] })).toBe(false);
    expect(validate({ toolNamePrefix: 'sometimes' })).toBe(false);
  });
});

describe('examples/cdk (CDK context files)', () => {
  const contextOf = (context: Record<string, unknown>) =>
    readGatewayContext({ tryGetContext: (key) => context[key], getAllContext: () => context });
  // What gets deployed: the validated configuration and the deployment settings (not how they were spelt).
  const deployed = (context: Record<string, unknown>) => {
    const { config, deployment, tableNameGiven } = contextOf(context);
    return { config, deployment, tableNameGiven };
  };
  const exampleContext = (name: string) =>
    JSON.parse(readFileSync(join(ROOT, name), 'utf8')) as Record<string, unknown>;

  test.each(filesIn('cdk').map(relative))('%s is valid CDK context for the stack', (name) => {
    expect(() => contextOf(exampleContext(name))).not.toThrow();
  });

  // docs/deploy.md, "Example context files": the two ways to use one, since the CDK reads no context file.
  test.each(filesIn('cdk').map(relative))("%s copied into cdk.json's context deploys what the file says", (name) => {
    const cdkJson = JSON.parse(readFileSync(join(ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
    const example = exampleContext(name);
    expect(deployed({ ...cdkJson.context, ...example })).toEqual(deployed(example));
  });

  test("docs/deploy.md's -c flags for public-jwt.json are that file", () => {
    const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    const block = /```bash\n(npx cdk deploy \\\n {2}-c stackName=McpGatewayPublic[^`]*)```/.exec(docs)?.[1];
    expect(block).toBeDefined();
    // `-c key=value`, the value bare or in single quotes, as the shell passes it: a string.
    const flags = Object.fromEntries(
      [...(block ?? '').matchAll(/-c (\w+)=(?:'([^']*)'|(\S+))/g)].map(([, key, quoted, bare]) => [
        key,
        quoted ?? bare,
      ]),
    );
    const example = exampleContext('examples/cdk/public-jwt.json');
    expect(Object.keys(flags).sort()).toEqual(Object.keys(example).sort());
    expect(deployed(flags)).toEqual(deployed(example));
  });
});

describe('examples/clients', () => {
  test.each(filesIn('clients').map(relative))('%s is JSON naming the gateway endpoint', (name) => {
    const text = readFileSync(join(ROOT, name), 'utf8');
    expect(() => JSON.parse(text)).not.toThrow();
    expect(text).toMatch(/\/mcp"/);
  });
});
