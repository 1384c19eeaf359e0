import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { send } from '../../lambda/targets/http-client';
import { listen } from '../support/loopback';

/**
 * The gateway's pooled connections to a target end on the gateway's side before the target's own
 * idle timeout (the `Keep-Alive: timeout=N` it announces, as Node's HTTP server does with 5 s).
 * Otherwise a call sent on a connection the target is closing at that moment fails with a reset, and
 * a `tools/call` is never sent twice (it could run twice): the client would get "unreachable" from a
 * target that is fine. A target that announces nothing is still let go of after a few idle seconds.
 */

interface IdleTarget {
  url: URL;
  /** Settles with who closed the connection the request came on: the gateway (its FIN first) or the target. */
  closedBy: Promise<'gateway' | 'target'>;
  close(): Promise<void>;
}

async function idleTarget(keepAliveTimeoutMs: number): Promise<IdleTarget> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  server.keepAliveTimeout = keepAliveTimeoutMs;
  let connected: (socket: Socket) => void = () => undefined;
  const connection = new Promise<Socket>((resolve) => {
    connected = resolve;
  });
  server.once('connection', connected);
  const { base, close } = await listen(server);
  const closedBy = connection.then(
    (socket) =>
      new Promise<'gateway' | 'target'>((resolve) => {
        // 'end' is the peer's FIN; a close without it first is the server's own idle timeout.
        socket.once('end', () => resolve('gateway'));
        socket.once('close', () => resolve('target'));
      }),
  );
  return { url: new URL(`${base}/mcp`), closedBy, close };
}

async function oneRequest(url: URL): Promise<void> {
  const res = await send(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  expect(res.status).toBe(200);
  await res.text();
}

it('a target announcing a 3 s idle timeout: its idle connection is closed by the gateway first', async () => {
  const target = await idleTarget(3000);
  try {
    await oneRequest(target.url);
    expect(await target.closedBy).toBe('gateway');
  } finally {
    await target.close();
  }
});

it('a target announcing nothing: its idle connection is still closed by the gateway after a few seconds', async () => {
  // keepAliveTimeout 0: Node's server then neither announces nor applies an idle timeout.
  const target = await idleTarget(0);
  try {
    await oneRequest(target.url);
    expect(await target.closedBy).toBe('gateway');
  } finally {
    await target.close();
  }
});

it('a response silent for longer than the idle bound is not cut (the bound is for idle pooled connections only)', async () => {
  let answer: () => void = () => undefined;
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': open\n\n');
    answer = () => res.end('data: {}\n\n');
  });
  const { base, close } = await listen(server);
  try {
    const res = await send(new URL(`${base}/mcp`), { method: 'GET', headers: { accept: 'text/event-stream' } });
    const body = res.text();
    // The target says nothing until the connection's idle bound has passed (its socket says so).
    await once(res.body.socket, 'timeout');
    answer();
    expect(await body).toBe(': open\n\ndata: {}\n\n');
  } finally {
    await close();
  }
});
