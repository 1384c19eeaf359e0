import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { type LambdaMode, startLambdaMode } from '../../dev/lambda-mode';
import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { callAndAnswer, eventually, initSession, type Json, post, readMessage } from '../support/mcp-http';

/**
 * The deployment bundle (dist/lambda/index.mjs) in `--lambda` mode: frozen environments and pooled
 * upstream connections, and two `npm start -- --lambda` processes on one DynamoDB as one deployment.
 */
const ALL = { elicitation: { form: {}, url: {} }, sampling: {} };

let dynamo: Awaited<ReturnType<typeof startEmbeddedDynamo>>;
let demo: DemoTarget;
beforeAll(async () => {
  dynamo = await startEmbeddedDynamo();
  demo = await startDemoTarget();
});
afterAll(async () => {
  await demo?.close();
  await dynamo?.close();
});

/**
 * A TCP proxy in front of a target that drops a connection idle for `idleMs`, like a load balancer or
 * NAT with a short idle timeout: the target still advertises its own (longer) keep-alive, so a client
 * keeps the connection pooled. The Host header is rewritten to the target's (it checks it).
 */
async function startIdleClosingProxy(targetUrl: string, idleMs: number) {
  const target = new URL(targetUrl);
  let closedIdle = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = netConnect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('data', (chunk: Buffer) => {
      const { port } = server.address() as AddressInfo;
      upstream.write(
        chunk.toString('latin1').replace(new RegExp(`^(host: *[^:\r]+:)${port}\r$`, 'im'), `$1${target.port}\r`),
        'latin1',
      );
    });
    upstream.pipe(client);
    client.setTimeout(idleMs, () => {
      closedIdle++;
      close();
    });
    for (const socket of [client, upstream]) socket.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${target.pathname}`,
    closedIdle: () => closedIdle,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('the gateway bundle in --lambda mode', () => {
  let proxy: Awaited<ReturnType<typeof startIdleClosingProxy>>;
  let gateway: LambdaMode;

  beforeAll(async () => {
    proxy = await startIdleClosingProxy(demo.url, 1000);
    gateway = await startLambdaMode({
      port: 0,
      demo: false,
      dynamodbEndpoint: dynamo.endpoint,
      config: { targets: [{ name: 'demo', url: proxy.url }], logLevel: 'SILENT' },
      log: () => undefined,
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await proxy?.close();
  });

  const echo = async (headers: Record<string, string>, text: string) => {
    const res = await post(gateway.url, headers, {
      jsonrpc: '2.0',
      id: text,
      method: 'tools/call',
      params: { name: 'demo___echo', arguments: { text } },
    });
    const message = await readMessage(res);
    if (!message.result) throw new Error(`tools/call ${text}: ${JSON.stringify(message)}`);
    return message;
  };

  it('still works after a freeze longer than the target keep-alive timeout', async () => {
    const { headers } = await initSession(gateway.url);
    expect((await echo(headers, 'before')).result.content[0].text).toBe('echo: before');
    const { environments, freezes } = gateway.stats();
    expect(environments).toBe(1); // one environment served it all and now holds pooled connections
    const idleBefore = proxy.closedIdle();
    // Frozen, while the target side drops the idle connections after 1 s.
    await eventually(() => expect(proxy.closedIdle()).toBeGreaterThan(idleBefore));
    expect(gateway.stats().detail[0].state).toBe('frozen');
    expect((await echo(headers, 'after')).result.content[0].text).toBe('echo: after');
    expect(gateway.stats().freezes).toBe(freezes + 1);
    expect(gateway.stats().coldStarts).toBe(1);
  });
});

/** Pids of a process's execution environments (children running aws-lambda-ric), from /proc. */
function environmentPids(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(
        readFileSync(`/proc/${entry}/stat`, 'utf8')
          .replace(/^.*\) /s, '')
          .split(' ')[1],
      );
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (ppid === parent && command.includes('aws-lambda-ric')) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** `npm start -- --lambda --port 0 --config F --dynamodb-endpoint URL --no-demo`. */
async function startLambdaCli(configFile: string, endpoint: string) {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'dev/cli.ts',
      '--lambda',
      '--port',
      '0',
      '--config',
      configFile,
      '--dynamodb-endpoint',
      endpoint,
      '--no-demo',
    ],
    { cwd: join(__dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line: ${output}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /MCP gateway ready: (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}: ${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    stop: () =>
      new Promise<number | null>((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', (code) => resolve(code));
        child.kill('SIGTERM');
      }),
  };
}

describe('two npm start -- --lambda processes on one --dynamodb-endpoint', () => {
  let a: Awaited<ReturnType<typeof startLambdaCli>>;
  let b: Awaited<ReturnType<typeof startLambdaCli>>;

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gw-lambda-')), 'config.json');
    writeFileSync(file, JSON.stringify({ targets: [{ name: 'demo', url: demo.url }], logLevel: 'SILENT' }));
    [a, b] = await Promise.all([startLambdaCli(file, dynamo.endpoint), startLambdaCli(file, dynamo.endpoint)]);
  }, 90_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('behave like one deployment: an elicitation asked through one is answered through the other', async () => {
    expect(a.output()).toMatch(/Lambda mode: .* on Node\.js v2\d/);
    const { headers } = await initSession(a.url, { capabilities: ALL });
    const call = await callAndAnswer(
      a.url,
      headers,
      { id: 'cross', params: { name: 'demo___use_aws', arguments: { command: 'across' } } },
      () => ({ result: { action: 'accept', content: { confirm: true } } }),
      { answerUrl: b.url },
    );
    expect(call.messages[0].method).toBe('elicitation/create');
    expect(call.answerStatuses).toEqual([202]);
    expect((call.response as Json).result.content[0].text).toBe('executed: across');
  });

  it('stops its environments on SIGTERM', async () => {
    const environments = environmentPids(b.child.pid!);
    expect(environments.length).toBeGreaterThan(0); // b served the answer, so it has an environment
    expect(await b.stop()).toBe(0);
    for (const pid of environments) expect(existsSync(`/proc/${pid}`)).toBe(false);
  });
});
