import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { GatewayKind } from '../support/gateways';
import { drained, listen } from '../support/loopback';
import { eventually, initSession } from '../support/mcp-http';
import { withGateway } from '../support/with-gateway';

/**
 * Backpressure: a client that stops reading its stream must not make the gateway buffer what the target
 * sends. The gateway stops reading the target while the client's stream is full (the target's writes
 * then wait, as they would for a slow direct client), and after `stalledClientTimeoutSeconds` without
 * the client reading it treats the client as gone: the stream is cut. What that means for the call is
 * what a disconnect means: a resumable stream (a 2025-11-25 session) is not cancelled by it (spec,
 * transports: a disconnect is not a cancellation; the client may reconnect with Last-Event-ID), so the
 * call goes on at the pace of the stream's event log; a stream that cannot be resumed (a 2026-07-28
 * request) ends the call, and the target is told.
 */
/** The Lambda handler behind a function-URL invoker that passes the client's backpressure on, as a socket does. */
const kinds: GatewayKind[] = ['local server', 'lambda handler'];
const MB = 1024 * 1024;
/** What the target would send if nothing pushed back. */
const FLOOD_BYTES = 200 * MB;
/** Far above what the gateway and the sockets between hold when they push back, far below the flood. */
const PUSHED_BACK_BELOW = 32 * MB;

interface FloodTarget {
  url: string;
  close(): Promise<void>;
  /** Bytes of the call's stream the target got written (the gateway took them off the socket, or the kernel did). */
  written(): number;
  cancelled: string[];
  /** Call streams closed (by the gateway, or ended). */
  streamsClosed(): number;
}

/** A 2025 target whose `flood` tool sends progress notifications of 64 KB each, up to FLOOD_BYTES, honouring drain. */
async function startFloodTarget(): Promise<FloodTarget> {
  let written = 0;
  let closed = 0;
  const cancelled: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    res.on('error', () => undefined);
    let raw = '';
    req.on('data', (chunk) => (raw += chunk));
    req.on('end', async () => {
      const body = raw ? JSON.parse(raw) : {};
      if (body.method === 'notifications/cancelled') cancelled.push(String(body.params.requestId));
      if (!('id' in body) || !body.method) return void res.writeHead(202).end();
      const answer = (result: object) => {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'flood-1' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
      };
      if (body.method === 'initialize')
        return answer({
          protocolVersion: '2025-11-25',
          capabilities: { tools: {} },
          serverInfo: { name: 'flood', version: '0' },
        });
      if (body.method === 'tools/list') return answer({ tools: [{ name: 'flood', inputSchema: { type: 'object' } }] });
      if (body.method !== 'tools/call') return answer({});
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.once('close', () => closed++);
      const token = body.params._meta.progressToken;
      const filler = 'x'.repeat(64 * 1024);
      let sent = 0;
      for (let i = 0; sent < FLOOD_BYTES && !res.destroyed; i++) {
        const event = `event: message\ndata: ${JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/progress',
          params: { progressToken: token, progress: i, message: filler },
        })}\n\n`;
        sent += event.length;
        written += event.length;
        if (!res.write(event)) {
          await drained(res);
        }
      }
      if (!res.destroyed)
        res.end(
          `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [] } })}\n\n`,
        );
    });
  });
  const started = await listen(server);
  return {
    url: `${started.base}/mcp`,
    close: started.close,
    written: () => written,
    cancelled,
    streamsClosed: () => closed,
  };
}

/** POSTs the call with node:http and stops reading as soon as the response headers arrive. */
function callAndStopReading(url: string, headers: Record<string, string>, body: object): Promise<IncomingMessage> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      (res) => {
        res.pause();
        res.on('error', () => undefined);
        resolve(res);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** The rest of a response the client had stopped reading, up to where its connection ends (cut or complete). */
function rest(res: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    res.once('close', () => resolve(text));
    res.resume();
  });
}

/** Waits until `value` has not changed for `quietMs` (bounded), and returns it. */
async function settled(value: () => number, quietMs = 1000, boundMs = 30_000): Promise<number> {
  const until = Date.now() + boundMs;
  let last = value();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const now = value();
    if (now === last || Date.now() > until) return now;
    last = now;
  }
}

describe.each(kinds)('a client that stops reading its stream, through the %s', (kind) => {
  const gw = withGateway(
    { logLevel: 'SILENT', stalledClientTimeoutSeconds: 3 },
    { kind, targets: { flood: () => startFloodTarget() } },
  );

  it('pushes back on the target instead of buffering its stream, then cuts the resumable stream after the stall bound; the call goes on for a reconnect', async () => {
    const { headers } = await initSession(gw.url);
    const res = await callAndStopReading(gw.url, headers, {
      jsonrpc: '2.0',
      id: 'flood',
      method: 'tools/call',
      params: { name: 'flood___flood', arguments: {}, _meta: { progressToken: 'p' } },
    });
    expect(res.headers['content-type']).toMatch(/text\/event-stream/);
    const flood = gw.targets.flood;
    const before = { written: flood.written(), closed: flood.streamsClosed() };
    const took = (await settled(() => flood.written())) - before.written;
    expect(took).toBeLessThan(PUSHED_BACK_BELOW);
    // The client never reads again: after the stall bound its stream is cut, as for a client gone. A
    // disconnect does not cancel a resumable stream's call: the target is not told, and its call runs
    // to its end (what the client was not sent is kept for a reconnect, up to the log's cap).
    // The call's end is the flood's end: 200 MB through the gateway at the log's pace, tens of seconds
    // on a machine running a second copy of this suite.
    await eventually(() => expect(flood.streamsClosed()).toBe(before.closed + 1), 150_000);
    expect(flood.cancelled).not.toContain('c.s.flood');
    // What the stalled client finally reads ends without the call's result: its stream was cut.
    expect(await rest(res)).not.toContain('"id":"flood"');
  }, 240_000);

  it('pushes back for a 2026-07-28 request too, and ends that call after the stall bound (its stream cannot be resumed)', async () => {
    const flood = gw.targets.flood;
    const before = { written: flood.written(), closed: flood.streamsClosed(), cancelled: flood.cancelled.length };
    const res = await callAndStopReading(
      gw.url,
      { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'flood___flood' },
      {
        jsonrpc: '2.0',
        id: 'flood-2026',
        method: 'tools/call',
        params: {
          name: 'flood___flood',
          arguments: {},
          _meta: {
            progressToken: 'p',
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      },
    );
    expect(res.headers['content-type']).toMatch(/text\/event-stream/);
    const took = (await settled(() => flood.written())) - before.written;
    expect(took).toBeLessThan(PUSHED_BACK_BELOW);
    await eventually(() => {
      expect(flood.cancelled.length).toBeGreaterThan(before.cancelled);
      expect(flood.streamsClosed()).toBe(before.closed + 1);
    }, 15_000);
    res.destroy();
  }, 60_000);
});
