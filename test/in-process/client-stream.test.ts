import { type InProcessGateway, inProcessGateway } from '../support/in-process';
import { eventually } from '../support/mcp-http';
import { MemorySessionStore } from '../support/memory-store';

/**
 * The session's standalone GET stream in-process (memory store, no target reached): the switch that
 * turns it off, and how it ends when the instance shuts down or its invocation's deadline comes.
 */

const NEVER = [{ name: 'never', url: 'http://127.0.0.1:9/mcp' }];
const SSE = { accept: 'text/event-stream' };

describe('clientStreamHoldSeconds: 0', () => {
  let gateway: InProcessGateway;
  beforeAll(() => {
    gateway = inProcessGateway({ targets: NEVER, clientStreamHoldSeconds: 0 });
  });

  it('answers GET with 405 (Allow: POST, DELETE) and declares no list changes and no subscriptions', async () => {
    const { headers, result } = await gateway.initSession();
    expect(result.capabilities).toMatchObject({
      tools: { listChanged: false },
      prompts: { listChanged: false },
      resources: { subscribe: false, listChanged: false },
    });
    const res = await gateway.fetch('/mcp', { method: 'GET', headers: { ...SSE, ...headers } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, DELETE');
  });

  it('answers resources/subscribe with -32601: there would be no stream to deliver updates on', async () => {
    const { headers } = await gateway.initSession();
    const answer = await gateway.call(headers, 1, 'resources/subscribe', { uri: 'note://x' });
    expect(answer.error).toMatchObject({ code: -32601 });
  });
});

describe('how a client GET stream ends', () => {
  it('at the invocation deadline (less a margin for its cleanup), with retry, and releases the stream item', async () => {
    const gateway = inProcessGateway({ targets: NEVER, clientStreamRetryMs: 700 });
    const { headers, sessionId } = await gateway.initSession();
    const res = await gateway.fetch('/mcp', { method: 'GET', headers: { ...SSE, ...headers } }, { deadlineMs: 3300 });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/retry: 700\n\n$/);
    const session = (await gateway.store.loadSession(sessionId))!.session;
    expect(await gateway.store.acquireClientStream(session, 'next', Date.now() + 1000)).toBe(true);
  });

  it('on graceful shutdown, with retry, so the client reconnects to another instance', async () => {
    const gateway = inProcessGateway({ targets: NEVER, clientStreamRetryMs: 500 });
    const { headers } = await gateway.initSession();
    const res = await gateway.fetch('/mcp', { method: 'GET', headers: { ...SSE, ...headers } });
    expect(res.status).toBe(200);
    const text = res.text();
    await gateway.deps.activeCalls.shutdown(1000);
    expect(await text).toMatch(/retry: 500\n\n$/);
  });
});

/** A store whose session reads after the first `open` ones wait for `release()`; it logs what happens. */
class GatedRescans extends MemorySessionStore {
  readonly events: string[] = [];
  open = 1;
  private gate?: Promise<void>;
  release: () => void = () => undefined;
  override async loadSession(...args: Parameters<MemorySessionStore['loadSession']>) {
    if (this.open-- > 0) return super.loadSession(...args);
    this.gate ??= new Promise<void>((resolve) => {
      this.release = resolve;
    });
    this.events.push('read started');
    await this.gate;
    this.events.push('read settled');
    return super.loadSession(...args);
  }
  override async releaseClientStream(...args: Parameters<MemorySessionStore['releaseClientStream']>) {
    this.events.push('stream released');
    return super.releaseClientStream(...args);
  }
}

it('a stream that ends while its rescan reads the session ends after that read (nothing of it outlives the response)', async () => {
  const store = new GatedRescans();
  const gateway = inProcessGateway({ targets: NEVER }, { store });
  const { headers } = await gateway.initSession();
  store.open = 1; // the GET's own read; the rescans (every 2 s) wait at the gate
  const res = await gateway.fetch('/mcp', { method: 'GET', headers: { ...SSE, ...headers } });
  expect(res.status).toBe(200);
  await eventually(() => expect(store.events).toContain('read started'), 10_000);
  // The client leaves while the rescan's read is in flight: the cancel runs the stream's end as far as
  // it goes at once (BackgroundTasks.run starts a task's synchronous part), which is up to the read.
  await res.body?.cancel();
  expect(store.events).toEqual(['read started']);
  // The read settles once let go, and only then the cleanup.
  store.release();
  await eventually(() => expect(store.events).toContain('stream released'));
  expect(store.events).toEqual(['read started', 'read settled', 'stream released']);
});
