import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { App } from 'aws-cdk-lib';
import { HANDLER_ENTRY, UNBUNDLED, writeBundle } from '../../lib/bundling';
import { buildGatewayApp } from '../../lib/mcp-gateway-stack';

const ROOT = join(__dirname, '..', '..');
const CDK = join(ROOT, 'node_modules', '.bin', 'cdk');

/**
 * Synthesis end to end, offline: real esbuild bundling (local, no Docker) and the cdk CLI.
 * The other CDK tests skip bundling to stay fast.
 */
describe('cdk synth (offline)', () => {
  const outdir = mkdtempSync(join(tmpdir(), 'mcp-gateway-synth-'));
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  test('the app synthesizes with the handler bundled as a split ESM bundle that loads, the same bytes npm run build writes', () => {
    const app = new App({ outdir });
    const stack = buildGatewayApp(app);
    const assembly = app.synth(); // runs cdk-nag too: any unacknowledged finding throws
    const template = assembly.getStackByName(stack.stackName).template as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
      Outputs: Record<string, { Value: unknown }>;
    };
    expect(Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function')).toHaveLength(1);
    // The function URL serves the published version through the alias `live`; the endpoint output ends with /mcp.
    const url = Object.values(template.Resources).find((r) => r.Type === 'AWS::Lambda::Url');
    expect(url?.Properties.Qualifier).toBe('live');
    expect(Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Alias')).toHaveLength(1);
    const outputs = template.Outputs;
    expect(outputs.McpEndpoint.Value).toEqual({ 'Fn::Join': ['', [outputs.GatewayUrl.Value, 'mcp']] });

    const assets = readdirSync(outdir).filter(
      (name) => name.startsWith('asset.') && existsSync(join(outdir, name, 'index.mjs')),
    );
    expect(assets).toHaveLength(1);
    const asset = join(outdir, assets[0]);
    const bundle = join(asset, 'index.mjs');
    const files = readdirSync(asset, { recursive: true, encoding: 'utf8' })
      .filter((name) => statSync(join(asset, name)).isFile())
      .sort();
    const kept = UNBUNDLED.flatMap((pkg) => pkg.files.map((file) => `node_modules/${pkg.name}/${file}`));
    const code = files.filter((name) => name.endsWith('.mjs'));
    expect(code.length).toBeGreaterThan(1); // index.mjs and the chunks it or its import()s load
    // The bundle, and beside it the packages it keeps whole (Cedar's engine).
    expect(files).toEqual([...code, ...code.map((name) => `${name}.map`), ...kept].sort());
    const bytes = code.reduce((sum, name) => sum + statSync(join(asset, name)).size, 0);
    expect(bytes).toBeGreaterThan(100_000);
    expect(bytes).toBeLessThan(3_000_000); // minified, SDK included; a jump means an unintended dependency
    expect(readFileSync(bundle, 'utf8').slice(0, 300)).toContain('createRequire');

    // The folder is what the build script writes (lib/bundling.ts `writeBundle`), file for file, byte for byte.
    const built = join(outdir, 'built');
    expect(writeBundle(HANDLER_ENTRY, built, ROOT)).toEqual(files);
    for (const name of files)
      expect([name, readFileSync(join(asset, name))]).toEqual([name, readFileSync(join(built, name))]);

    // Load it the way the runtime does (ESM import, `awslambda` global): CommonJS inside the bundle
    // that requires Node built-ins must work, and the streaming handler must be exported.
    const probe = `
      globalThis.awslambda = { streamifyResponse: (h) => h, HttpResponseStream: { from: (s) => s } };
      import(${JSON.stringify(`file://${bundle}`)}).then((m) => process.stdout.write(typeof m.handler));`;
    const loaded = execFileSync(process.execPath, ['--input-type=module', '-e', probe], {
      encoding: 'utf8',
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    });
    expect(loaded).toBe('function');
  }, 90_000);

  test('bin/app.ts: a misspelled key fails with one line, a suggestion, no stack trace and exit code 1', async () => {
    const run = promisify(execFile);
    const failure = await run(join(ROOT, 'node_modules', '.bin', 'tsx'), [join(ROOT, 'bin', 'app.ts')], {
      cwd: ROOT,
      env: {
        ...process.env,
        CDK_CONTEXT_JSON: JSON.stringify({ sesionTimeoutSeconds: '1200' }),
        CDK_OUTDIR: join(outdir, 'app'),
      },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string; stdout: string }) => error,
    );
    expect(failure).toBeDefined();
    expect(failure!.code).toBe(1);
    expect(failure!.stdout).toBe('');
    expect(failure!.stderr).toBe(
      'Invalid CDK context "sesionTimeoutSeconds": unknown key; did you mean "sessionTimeoutSeconds"?\n',
    );
  }, 60_000);

  test('the cdk CLI fails on invalid context and names the key, without a stack trace', async () => {
    const run = promisify(execFile);
    const failure = await run(CDK, ['synth', '-q', '-o', join(outdir, 'cli'), '-c', 'sesionTimeoutSeconds=1200'], {
      cwd: ROOT,
      env: { ...process.env, CDK_DISABLE_CLI_TELEMETRY: 'true' },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string; stdout: string }) => error,
    );
    expect(failure).toBeDefined();
    expect(failure!.code).not.toBe(0);
    const printed = `${failure!.stderr}${failure!.stdout}`;
    expect(printed).toContain(
      'Invalid CDK context "sesionTimeoutSeconds": unknown key; did you mean "sessionTimeoutSeconds"?',
    );
    expect(printed).not.toMatch(/^\s+at /m); // no stack trace from the app
  }, 90_000);
});
