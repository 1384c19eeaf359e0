import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayProcess, startGatewayProcess } from '../support/gateway-process';
import { drained, listen } from '../support/loopback';
import { initSession, type Json, post, readMessage } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Bounded input from targets: one message (an SSE event, a line that never ends, a JSON body) is read
 * up to `maxMessageBytes`, a listing up to `maxListItems` / `maxListBytes`; an overrun fails the call
 * with DependencyFailedException naming the target (a list leaves the target out), and the gateway's
 * memory stays bounded while a target sends 100 MB or more. The memory is the gateway process's own
 * (`npm start` as a child process, its peak resident set from /proc), the target runs in this process.
 */
const MB = 1024 * 1024;
const MEMORY_BOUND_MB = 300;

/** Peak resident memory of a process (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const line = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1]) / 1024;
}

/** Writes `total` bytes of `fill` in 1 MB chunks, waiting for the socket; stops quietly when the reader leaves. */
async function writeMany(res: ServerResponse, total: number, fill = 'x'): Promise<void> {
  const chunk = fill.repeat(MB);
  for (let written = 0; written < total && !res.destroyed; written += MB) {
    if (!res.write(chunk)) {
      await drained(res);
    }
  }
}

/**
 * A 2025 target (no session) whose tools send too much: `big_event` one 100 MB SSE event, `endless_line`
 * 300 MB of one SSE line that never ends, `big_json` a 100 MB JSON body. `lots` lists `listed` tools.
 */
async function startFloodTarget(listed = 3): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    res.on('error', () => undefined);
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', async () => {
      const body = raw ? JSON.parse(raw) : {};
      if (!('id' in body) || !body.method) return void res.writeHead(202).end();
      const id = JSON.stringify(body.id);
      const answer = (result: Json) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
      };
      if (body.method === 'initialize')
        return answer({
          protocolVersion: '2025-11-25',
          capabilities: { tools: {} },
          serverInfo: { name: 'flood', version: '0' },
        });
      if (body.method === 'tools/list') {
        const names = listed === 3 ? ['big_event', 'endless_line', 'big_json'] : [];
        for (let i = names.length; i < listed; i++) names.push(`tool_${i}`);
        return answer({ tools: names.map((name) => ({ name, inputSchema: { type: 'object' } })) });
      }
      if (body.method !== 'tools/call') return answer({});
      const tool = body.params.name;
      if (tool === 'big_json') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"`);
        await writeMany(res, 100 * MB);
        return void res.end('"}]}}');
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (tool === 'big_event') {
        res.write(`event: message\ndata: {"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"`);
        await writeMany(res, 100 * MB);
        return void res.end('"}]}}\n\n');
      }
      res.write('data: ');
      await writeMany(res, 300 * MB); // never a newline
      if (!res.destroyed) res.end();
    });
  });
  const started = await listen(server);
  return { url: `${started.base}/mcp`, close: started.close };
}

describe('a target sending more than one message may hold, to an `npm start` gateway process', () => {
  let dynamo: CountedDynamo;
  let flood: { url: string; close(): Promise<void> };
  let gateway: GatewayProcess;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    flood = await startFloodTarget();
    // Default limits (maxMessageBytes 16 MB): what an operator gets without configuring anything.
    gateway = await startGatewayProcess(
      { logLevel: 'SILENT', targets: [{ name: 'flood', url: flood.url }] },
      dynamo.endpoint,
    );
  }, 90_000);

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await flood?.close();
    await dynamo?.close();
  });

  it.each([
    ['one 100 MB SSE event', 'big_event', /sent an SSE event over 16777216 bytes/],
    ['a 300 MB SSE line that never ends', 'endless_line', /sent an SSE event over 16777216 bytes/],
    ['a 100 MB JSON body', 'big_json', /sent a body over 16777216 bytes/],
  ])(
    '%s: the client gets DependencyFailedException naming the target, the gateway stays under 300 MB',
    async (_, tool, reason) => {
      const { headers } = await initSession(gateway.url);
      const res = await post(gateway.url, headers, {
        jsonrpc: '2.0',
        id: tool,
        method: 'tools/call',
        params: { name: `flood___${tool}`, arguments: {} },
      });
      expect((await readMessage(res)).error).toMatchObject({
        code: -32603,
        message: expect.stringMatching(reason),
        data: { type: 'DependencyFailedException', target: 'flood' },
      });
      const pid = gateway.child.pid;
      if (pid === undefined) throw new Error('no gateway pid');
      expect(peakRssMb(pid)).toBeLessThan(MEMORY_BOUND_MB);
    },
    120_000,
  );
});

describe('a target listing more than a listing may hold', () => {
  const gw = withGateway(
    (targets) => ({
      logLevel: 'SILENT',
      targets: [
        { name: 'demo', url: targets.demo.url },
        { name: 'many', url: targets.many.url, limits: { maxListItems: 100 } },
        { name: 'wide', url: targets.wide.url, limits: { maxListBytes: 4096 } },
      ],
    }),
    {
      targets: {
        demo: () => startDemoTarget(),
        many: () => startFloodTarget(101),
        wide: () => startFloodTarget(100),
      },
    },
  );

  it('is left out of tools/list like a failing target; the others are listed', async () => {
    const { headers } = await initSession(gw.url);
    const body = await readMessage(await post(gw.url, headers, { jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    const targets = new Set(body.result.tools.map((tool: Json) => String(tool.name).split('___')[0]));
    expect([...targets]).toEqual(['demo']);
  });
});
