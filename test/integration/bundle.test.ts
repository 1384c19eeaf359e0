import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build, transformSync } from 'esbuild';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { esbuildOptions, HANDLER_ENTRY, UNBUNDLED, WEB_FUNCTION_ENTRY } from '../../lib/bundling';
import { callAndAnswer, initSession, post, readMessage } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/** The bundle `npm run build` produces (and CDK deploys) runs the whole relay on its own. */
describe('the bundled Lambda handler', () => {
  const bundle = join(__dirname, '../../dist/lambda/index.mjs');
  // DynamoDB and the demo target; the gateway is the bundle, started by the test in its own process.
  const gw = withGateway({ logLevel: 'SILENT' }, { targets: { demo: () => startDemoTarget() }, instances: 0 });

  beforeAll(async () => {
    await ensureTable(createDocumentClient({ endpoint: gw.dynamodbEndpoint }), 'mcp-gateway');
  });

  it('exists after npm run build: index.mjs and its chunks, each with its source map, and the packages kept beside them', () => {
    expect(existsSync(bundle)).toBe(true);
    const folder = dirname(bundle);
    const code = readdirSync(folder).filter((name) => name.endsWith('.mjs'));
    expect(readdirSync(folder).sort()).toEqual([...code, ...code.map((name) => `${name}.map`), 'node_modules'].sort());
    const kept = UNBUNDLED.flatMap((pkg) => pkg.files.map((file) => join('node_modules', pkg.name, file)));
    expect(
      readdirSync(join(folder, 'node_modules'), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.includes('.'))
        .sort(),
    ).toEqual(kept.map((file) => file.slice('node_modules/'.length)).sort());
    expect(code.reduce((sum, name) => sum + statSync(join(folder, name)).size, 0)).toBeLessThan(3 * 1024 * 1024);
  });

  /** The bundle serving `config` through the function-URL invoker, in its own process. */
  function serveBundle(config: object): { url: Promise<string>; stop(): void } {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/serve-bundle.ts'], {
      cwd: join(__dirname, '../..'),
      env: {
        ...process.env,
        GATEWAY_CONFIG: JSON.stringify(config),
        DYNAMODB_ENDPOINT: gw.dynamodbEndpoint,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const url = new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`bundle did not start: ${out}`)), 20_000);
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        const match = /ready (\S+)/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    return { url, stop: () => child.kill('SIGTERM') };
  }

  it('decides with Cedar policies: the engine it keeps beside it loads and lists only what they permit', async () => {
    const served = serveBundle({
      ...gw.config,
      policy: { policies: 'permit (principal, action, resource == McpGateway::Tool::"demo___echo");' },
    });
    try {
      const url = await served.url;
      const { headers } = await initSession(url, { capabilities: {} });
      const listed = await readMessage(await post(url, headers, { jsonrpc: '2.0', id: 2, method: 'tools/list' }));
      expect(listed.result.tools.map((tool: { name: string }) => tool.name)).toEqual(['demo___echo']);
    } finally {
      served.stop();
    }
  }, 40_000);

  it('serves an elicitation round trip through the function-URL invoker', async () => {
    const served = serveBundle(gw.config);
    try {
      const url = await served.url;
      const { headers } = await initSession(url, { capabilities: { elicitation: { form: {} } } });
      const call = await callAndAnswer(
        url,
        headers,
        { id: 1, params: { name: 'use_aws', arguments: { command: 'bundled' } } },
        () => ({
          result: { action: 'accept', content: { confirm: true } },
        }),
      );
      expect(call.response.result.content[0].text).toBe('executed: bundled');
    } finally {
      served.stop();
    }
  }, 40_000);
});

describe('lambda/', () => {
  const root = join(__dirname, '../..');

  it('holds only what the bundles of the two forms contain, and they nothing of the repository outside lambda/', async () => {
    // The function URL's handler and the Web Function's server: one core, two thin entries.
    const inputs = async (entry: string) =>
      (
        await build({
          ...esbuildOptions(entry, join(tmpdir(), 'mcp-gateway-metafile')),
          absWorkingDir: root,
          metafile: true,
          write: false,
          logLevel: 'silent',
        })
      ).metafile.inputs;
    const bundled = [
      ...new Set([...Object.keys(await inputs(HANDLER_ENTRY)), ...Object.keys(await inputs(WEB_FUNCTION_ENTRY))]),
    ];
    expect(bundled.filter((input) => !input.startsWith('lambda/') && !input.includes('node_modules/'))).toEqual([]);
    // A module of types only (a deps interface) is erased by every import of it, so no bundle holds it.
    const withCode = readdirSync(join(root, 'lambda'), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => `lambda/${file.split('\\').join('/')}`)
      .filter((file) => transformSync(readFileSync(join(root, file), 'utf8'), { loader: 'ts' }).code.trim() !== '');
    expect(withCode.filter((file) => !bundled.includes(file))).toEqual([]);
  });
});
