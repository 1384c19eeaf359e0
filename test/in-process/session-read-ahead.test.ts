import { targetCallIdOf } from '../../lambda/legacy/ids';
import type { GatewayLogger } from '../../lambda/observability/logger';
import type { LoadedSession } from '../../lambda/state/store';
import { type ExchangeOptions, type InProcessGateway, inProcessGateway, QUIET } from '../support/in-process';
import { eventually, readMessage } from '../support/mcp-http';
import { MemorySessionStore } from '../support/memory-store';
import { startV1PushServer, type V1PushServer } from '../support/servers/v1-push-server';

/**
 * Read-ahead: a relayed call of a session this instance read before goes to its target while the
 * session is read again, and nothing is answered before that read. The store below holds session
 * reads at a gate, so the order of "the target has the call" and "the read returned" is observed,
 * not timed.
 */
class GatedStore extends MemorySessionStore {
  private gate?: { opened: Promise<void>; open: () => void };
  /** Session reads that have reached the gate and wait there. */
  waiting = 0;

  close(): void {
    let open = () => {};
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.gate = { opened, open };
  }

  open(): void {
    this.gate?.open();
    this.gate = undefined;
  }

  override async loadSession(
    sessionId: string,
    now?: number,
    options?: { includeExpired?: boolean },
  ): Promise<LoadedSession | undefined> {
    const gate = this.gate;
    if (gate) {
      this.waiting++;
      await gate.opened;
      this.waiting--;
    }
    return super.loadSession(sessionId, now, options);
  }
}

const call = (id: string, ms = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'legacy___wait', arguments: { ms } },
});

let target: V1PushServer;
beforeAll(async () => {
  target = await startV1PushServer();
});
afterAll(async () => target?.close());

const calls = () => target.stats().requestsByMethod['tools/call'] ?? 0;
/** Calls of the target's `deploy` tool begun (it asks the user first): the barrier calls below. */
const deploys = () => target.stats().asked['elicitation/create'] ?? 0;

function gatewayOn(store: GatedStore, readAhead = true, logger?: GatewayLogger): InProcessGateway {
  return inProcessGateway(
    { targets: [{ name: 'legacy', url: target.url }], sessionReadAhead: readAhead },
    { store, ...(logger ? { logger } : {}) },
  );
}

/**
 * A barrier: a `deploy` call sent ahead now (through `gateway`, which read the session of `headers`
 * before) reaches the target while the session reads are held. Whatever the gateway had sent to the
 * target before, on the same path (a call, an initialize), left before it and is there by then: the
 * same code up to the request, the same keep-alive agent.
 */
async function aheadCallArrived(
  gateway: InProcessGateway,
  headers: Record<string, string>,
  exchange?: ExchangeOptions,
): Promise<{ answered: Promise<Response> }> {
  const before = deploys();
  const body = {
    jsonrpc: '2.0',
    id: 'barrier',
    method: 'tools/call',
    params: { name: 'legacy___deploy', arguments: { env: 'barrier' } },
  };
  const answered = gateway.post(headers, body, exchange);
  await eventually(() => expect(deploys()).toBe(before + 1));
  return { answered }; // not the promise itself: an async function would wait for it
}

/** Reads a barrier call's answer to its end (it comes once the reads are let through). */
async function discard(barrier: { answered: Promise<Response> }): Promise<void> {
  await (await barrier.answered).text();
}

describe('a relayed call of a session read here before', () => {
  it('reaches its target before the session read returns, and is answered only after it', async () => {
    const store = new GatedStore();
    const gateway = gatewayOn(store);
    const { headers } = await gateway.initSession();
    expect((await readMessage(await gateway.post(headers, call('warm')))).result).toBeDefined();

    store.close();
    const before = calls();
    let answered = false;
    const response = gateway.post(headers, call('ahead')).then((res) => {
      answered = true;
      return res;
    });
    await eventually(() => expect(calls()).toBe(before + 1)); // at the target, while the read is held
    expect(store.waiting).toBe(1);
    expect(answered).toBe(false);
    store.open();
    const message = await readMessage(await response);
    expect(message.result.content[0].text).toMatch(/^waited/);
  });

  it('is answered 404 when another instance deleted the session meanwhile, and opens nothing new at the target', async () => {
    const store = new GatedStore();
    const lines: string[] = [];
    const gateway = gatewayOn(store, true, { ...QUIET, info: (message) => void lines.push(String(message)) });
    const other = gateway.another();
    const { headers } = await gateway.initSession();
    await readMessage(await gateway.post(headers, call('warm')));
    const second = await gateway.initSession(); // the barrier's session, read here too
    await readMessage(await gateway.post(second.headers, call('warm-second')));
    const deleted = await other.fetch('/mcp', { method: 'DELETE', headers });
    expect(deleted.status).toBe(200); // its target session ended too
    const opened = target.stats().initializeCount;

    store.close();
    const res = gateway.post(headers, call('after-delete', 200));
    // The call met the target session the DELETE ended: re-opening one waits for the read. An initialize
    // would leave right after this line (legacy-link.ts: the next attempt opens the session), and so
    // before the barrier call, on another session this instance read.
    await eventually(() => expect(lines).toContain('target session expired; re-initializing'));
    expect(store.waiting).toBe(1);
    const barrier = await aheadCallArrived(gateway, second.headers);
    expect(target.stats().initializeCount).toBe(opened);
    store.open();
    await discard(barrier);
    const refused = await res;
    expect(refused.status).toBe(404);
    expect(await refused.json()).toMatchObject({
      error: { code: -32600, message: expect.stringMatching(/^Session not found/) },
    });
    expect(target.stats().initializeCount).toBe(opened);
    // And the session is not known here any more: the next request waits for its read as any other.
    store.close();
    const again = gateway.post(headers, call('again'));
    await eventually(() => expect(store.waiting).toBe(1));
    store.open();
    expect((await again).status).toBe(404);
  });

  it('stops the call at its target when the session is found gone, also on a resumable stream', async () => {
    const store = new GatedStore();
    const gateway = gatewayOn(store);
    // A 2025-11-25 session whose client takes elicitation: its call streams are resumable, so a client
    // that leaves one does not cancel the call.
    const { headers, sessionId } = await gateway.initSession({ capabilities: { elicitation: { form: {} } } });
    await readMessage(await gateway.post(headers, call('warm')));
    const aborted = target.stats().abortedTools.length;
    store.close();
    const before = calls();
    // A client that accepts only SSE gets its stream at once (a call past a second turns into one too):
    // a resumable stream, which a leaving client does not cancel.
    const res = gateway.post({ ...headers, accept: 'text/event-stream' }, call('long', 20_000));
    await eventually(() => expect(calls()).toBe(before + 1)); // the call runs at the target
    // Gone meanwhile (as after a DELETE on another instance that could not reach the target): its
    // target session lives on, and so would the call.
    await store.deleteSession(sessionId);
    store.open();
    expect((await res).status).toBe(404);
    // Wound down before the 404 was answered (on Lambda nothing runs after the response ends).
    expect(gateway.deps.activeCalls.get(sessionId, targetCallIdOf('long'))).toBeUndefined();
    await eventually(() => expect(target.stats().abortedTools.length).toBe(aborted + 1));
  });

  it("never starts another principal's request with what its owner read", async () => {
    const store = new GatedStore();
    const gateway = gatewayOn(store);
    const alice = { platformPrincipal: 'arn:aws:iam::123456789012:user/alice' };
    const bob = { platformPrincipal: 'arn:aws:iam::123456789012:role/bob' };
    const init = await gateway.post(
      {},
      {
        jsonrpc: '2.0',
        id: 'i',
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      },
      alice,
    );
    const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')! };
    await init.body?.cancel();
    await readMessage(await gateway.post(headers, call('warm'), alice));

    store.close();
    const before = calls();
    const refused = gateway.post(headers, call('bob'), bob);
    await eventually(() => expect(store.waiting).toBe(1));
    // Alice's own call, sent ahead after Bob's request: a call of Bob's sent ahead would be there first.
    const barrier = await aheadCallArrived(gateway, headers, alice);
    expect(calls()).toBe(before + 1);
    store.open();
    expect((await refused).status).toBe(404);
    expect(calls()).toBe(before + 1);
    await discard(barrier);
  });
});

describe('with sessionReadAhead false', () => {
  it('a call leaves for its target only after its session read', async () => {
    const store = new GatedStore();
    const gateway = gatewayOn(store, false);
    const ahead = gatewayOn(store); // another instance, which reads ahead: the barrier's
    const { headers } = await gateway.initSession();
    await readMessage(await gateway.post(headers, call('warm')));
    await readMessage(await ahead.post(headers, call('warm-ahead')));

    store.close();
    const before = calls();
    const response = gateway.post(headers, call('after-read'));
    await eventually(() => expect(store.waiting).toBe(1));
    // A call sent ahead by the other instance after this one: had this one gone ahead, it would be there first.
    const barrier = await aheadCallArrived(ahead, headers);
    expect(calls()).toBe(before + 1);
    store.open();
    expect((await readMessage(await response)).result.content[0].text).toMatch(/^waited/);
    expect(calls()).toBe(before + 2);
    await discard(barrier);
  });
});
