import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { UNBUNDLED } from '../../lib/bundling';

const ROOT = join(__dirname, '..', '..');
const PACKAGE_DIR = join(ROOT, 'packages', 'construct');
const NAME = 'mcp-gateway-cdk';
const STACK = 'McpGatewayConsumer';

/** The TypeScript snippet docs/deploy.md shows for using the installed package: the test runs exactly that. */
function documentedApp(): string {
  const docs = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
  const block = [...docs.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((match) => match[1])
    .find((code) => code.includes(`from '${NAME}'`));
  if (!block) throw new Error(`docs/deploy.md has no \`\`\`ts block importing from '${NAME}'`);
  return block;
}

/** Runs node with these arguments; a failure shows the end of what it printed (tsc reports on stdout). */
function run(args: string[], cwd: string, env: Record<string, string> = {}): void {
  try {
    execFileSync(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: 'pipe', timeout: 180_000 });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`node ${args.join(' ')} failed:\n${`${stdout ?? ''}${stderr ?? ''}`.slice(-4000)}`);
  }
}

/**
 * The construct as another CDK app gets it: `npm pack` (its prepack script builds the package), the
 * tarball unpacked into a fresh app's node_modules as npm lays it out, next to the peer dependencies
 * and the package's declared dependencies only (linked from this repository's node_modules: offline),
 * the documented snippet compiled with tsc and run with node from that folder, which synthesizes.
 */
/** The files under `dir` (not its folders), relative to it, sorted. */
function filesIn(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => statSync(join(dir, name)).isFile())
    .sort();
}

describe('the construct package, used from another CDK app', () => {
  const work = mkdtempSync(join(tmpdir(), 'mcp-gateway-construct-'));
  const app = join(work, 'app');
  const installed = join(app, 'node_modules', NAME);
  const outdir = join(app, 'cdk.out');
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  beforeAll(() => {
    execFileSync('npm', ['pack', '--pack-destination', work], {
      cwd: PACKAGE_DIR,
      stdio: 'ignore',
      env: { ...process.env, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
      timeout: 180_000,
    });
    const tarball = readdirSync(work).find((name) => name.startsWith(`${NAME}-`) && name.endsWith('.tgz'));
    if (!tarball) throw new Error('npm pack wrote no tarball');
    mkdirSync(installed, { recursive: true });
    execFileSync('tar', ['-xzf', join(work, tarball), '-C', installed, '--strip-components=1']);

    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
    };
    // What the app itself has (the peers, Node's types) plus what the package declares: nothing else resolves.
    const linked = [
      '@types/node',
      ...Object.keys(manifest.peerDependencies ?? {}),
      ...Object.keys(manifest.dependencies ?? {}),
    ];
    for (const name of linked) {
      const link = join(app, 'node_modules', name);
      mkdirSync(dirname(link), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', name), link, 'dir');
    }
    writeFileSync(join(app, 'app.ts'), documentedApp());
    // Strict, and the package's declarations are checked too (no skipLibCheck); zod's need esModuleInterop.
    const tsc = require.resolve('typescript/bin/tsc');
    const options = ['--strict', '--esModuleInterop', '--target', 'ES2022', '--module', 'commonjs', '--types', 'node'];
    run([tsc, ...options, 'app.ts'], app);
    run(['app.js'], app, { CDK_OUTDIR: outdir });
  }, 420_000);

  test('the package ships the compiled construct with its declarations and the prebuilt handler, no sources', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.peerDependencies).toEqual({ 'aws-cdk-lib': expect.any(String), constructs: expect.any(String) });
    expect(manifest.private).toBeUndefined();
    // Released with the repository, and running on the dependency versions the repository tests.
    const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(manifest.version).toBe(root.version);
    for (const [name, version] of Object.entries(manifest.dependencies as Record<string, string>)) {
      expect([name, version]).toEqual([name, root.dependencies[name] ?? root.devDependencies[name]]);
    }
    expect(existsSync(join(installed, 'dist', 'lib', 'mcp-gateway.js'))).toBe(true);
    expect(existsSync(join(installed, 'dist', 'lib', 'mcp-gateway.d.ts'))).toBe(true);
    // The split bundle: index.mjs, the chunks it and its import()s load, each with its source map.
    // And beside it, the packages it keeps whole (Cedar's engine).
    const handler = filesIn(join(installed, 'dist', 'handler'));
    const code = handler.filter((name) => name.endsWith('.mjs'));
    expect(code).toContain('index.mjs');
    expect(code.length).toBeGreaterThan(1);
    const kept = UNBUNDLED.flatMap((pkg) => pkg.files.map((file) => `node_modules/${pkg.name}/${file}`));
    expect(handler).toEqual([...code, ...code.map((name) => `${name}.map`), ...kept].sort());
    const files = (readdirSync(installed, { recursive: true }) as string[]).filter(
      (file) => file.endsWith('.ts') && !file.endsWith('.d.ts'),
    );
    expect(files).toEqual([]);
  });

  test('cdk synth deploys the prebuilt handler bundle as the function code', () => {
    const template = JSON.parse(readFileSync(join(outdir, `${STACK}.template.json`), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const functions = Object.values(template.Resources).filter((r) => r.Type === 'AWS::Lambda::Function');
    expect(functions).toHaveLength(1);
    const fn = functions[0].Properties;
    expect(fn).toMatchObject({ Handler: 'index.handler', Runtime: 'nodejs24.x', MemorySize: 512 });

    // The code asset is the package's dist/handler folder, byte for byte: nothing was bundled at synth.
    const key = (fn.Code as { S3Key: string }).S3Key;
    const asset = join(outdir, `asset.${key.replace(/\.zip$/, '')}`);
    const files = filesIn(asset);
    expect(files).toEqual(filesIn(join(installed, 'dist', 'handler')));
    for (const name of files) {
      expect([name, readFileSync(join(asset, name))]).toEqual([
        name,
        readFileSync(join(installed, 'dist', 'handler', name)),
      ]);
    }
  });
});
