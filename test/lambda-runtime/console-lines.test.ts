import { copyFileSync, lstatSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { startLambdaMode } from '../../dev/lambda-mode';
import { ensureBundle } from '../../dev/lambda-mode/bundle';
import { WEB_FUNCTION_BUNDLE } from '../../dev/web-function-mode';
import { ensureRuntimeImage } from '../../tools/lambda-emulator/runtime-image';
import { runCli } from '../support/cli';
import { eventually, initSession, post, readMessage } from '../support/mcp-http';

/**
 * What `--lambda` and `--web-function` say while they prepare, serve and stop: the environments'
 * entries in the chosen format (their metric lines only as JSON), nothing that misleads.
 */

jest.setTimeout(60_000);

const PROBE = { file: join(__dirname, 'fixtures', 'probe.mjs'), handler: 'handler' };
const IMAGE = join(__dirname, '../../tools/lambda-emulator/image');

it('an environment stopped by the shutdown mid-invocation says so, not that its runtime exited', async () => {
  const dynamo = await startEmbeddedDynamo();
  const lines: string[] = [];
  const lambda = await startLambdaMode({
    port: 0,
    demo: false,
    dynamodbEndpoint: dynamo.endpoint,
    function: PROBE,
    log: (line) => lines.push(line),
  });
  try {
    const hanging = fetch(`${lambda.url.replace(/\/mcp$/, '')}/hang`).catch(() => undefined);
    await eventually(() => expect(lambda.stats().detail.map((e) => e.state)).toEqual(['busy']));
    await lambda.close();
    await hanging;
  } finally {
    await dynamo.close();
  }
  expect(lines).toEqual([expect.stringMatching(/^\[env 1\] stopped with the shutdown during invocation \S+$/)]);
});

it('names the bundle each form serves', async () => {
  const said: string[] = [];
  await ensureBundle('never', (line) => said.push(line));
  await ensureBundle('never', (line) => said.push(line), WEB_FUNCTION_BUNDLE);
  expect(said).toEqual([
    'deployment bundle: dist/lambda/index.mjs is up to date',
    'deployment bundle: dist/web-function/index.mjs is up to date',
  ]);
});

// A copy of the image's recipe in a clone that has not linked the machine's cached build yet.
const cached = (() => {
  try {
    return lstatSync(join(IMAGE, 'node_modules')).isSymbolicLink() ? readlinkSync(join(IMAGE, 'node_modules')) : '';
  } catch {
    return '';
  }
})();
it('a runtime image cached on this machine is taken as it is, said in one line', async () => {
  // The test set-up (npm run test:setup) links the machine's cached build here.
  expect(cached).not.toBe('');
  const clone = mkdtempSync(join(tmpdir(), 'runtime-image-'));
  try {
    for (const file of ['install.mjs', 'package.json', 'package-lock.json']) {
      copyFileSync(join(IMAGE, file), join(clone, file));
    }
    const said: string[] = [];
    const image = await ensureRuntimeImage((line) => said.push(line), process.env, clone);
    expect(image.ric).toBe(join(clone, 'node_modules', 'aws-lambda-ric', 'index.mjs'));
    expect(said).toEqual([`lambda runtime image: cached on this machine (${cached.replace(/\/node_modules$/, '')})`]);
  } finally {
    rmSync(clone, { recursive: true, force: true });
  }
});

describe("npm start -- --lambda: the environments' output", () => {
  const FREE_PORTS = ['--port', '0', '--demo-port', '0', '--demo-modern-port', '0'];

  /** Starts it, makes one call through a target (a metric line), stops it; what it wrote to stderr. */
  async function environmentsOutput(flags: string[]): Promise<string> {
    const cli = runCli(['--lambda', ...FREE_PORTS, ...flags], {});
    try {
      const url = await cli.ready();
      const { headers } = await initSession(url!);
      const res = await post(url!, headers, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'demo___echo', arguments: { text: 'env' } },
      });
      expect((await readMessage(res)).result.content[0].text).toBe('echo: env');
      await eventually(() => expect(cli.output().stderr).toMatch(/TargetLatency|tools\/call/), 10_000);
    } finally {
      cli.child.kill('SIGTERM');
    }
    await cli.exited;
    return cli.output().stderr;
  }

  it('human: a line per entry under its environment, no metric line', async () => {
    const stderr = await environmentsOutput(['--log-format', 'human']);
    expect(stderr).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[env \d+\] mcp request {2}POST tools\/call target=demo tool=echo status=200 outcome=complete \d+ ms session=\S{8}…$/m,
    );
    expect(stderr).not.toContain('"_aws"');
    expect(stderr).not.toMatch(/^\[env \d+\] \{/m);
  });

  it('json: the lines as CloudWatch would get them, metric lines included; --log-level reaches the environments', async () => {
    const stderr = await environmentsOutput(['--log-format', 'json', '--log-level', 'WARN']);
    expect(stderr).toMatch(/^\[env \d+\] \{"_aws":\{"Timestamp":\d+,"CloudWatchMetrics":/m);
    expect(stderr).not.toContain('"level":"INFO"');
  });
});
