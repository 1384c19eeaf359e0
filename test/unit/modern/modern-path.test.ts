import { META_KEYS } from '../../../lambda/protocol/meta';
import { fakeTarget, modernDeps, SERVER_INFO } from '../../support/modern-deps';
import { modernRequestMessage, postModern, requestModern } from '../../support/modern-post';

/**
 * A POST on the 2026-07-28 path (modern/modern-path.ts), with web Request/Response objects and scripted
 * targets: responses refused, notifications accepted, validation before anything is called, the caller
 * the targets see, and failures as the error table says (a timeout is 504).
 */

describe('a 2026-07-28 POST', () => {
  it('that is a JSON-RPC response is refused with 400 -32600 (clients send none in 2026-07-28)', async () => {
    const { deps } = modernDeps([fakeTarget('modern')]);
    const res = await postModern(deps, { kind: 'response', message: { jsonrpc: '2.0', id: 4, result: {} } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ id: 4, error: { code: -32600 } });
  });

  it('that is a notification is accepted with 202 and no body', async () => {
    const { deps } = modernDeps([fakeTarget('modern')]);
    const res = await postModern(deps, {
      kind: 'notification',
      message: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
    });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe('');
  });

  it('that fails validation is answered with the rule’s status and the request id, and calls no target', async () => {
    const target = fakeTarget('modern');
    const { deps } = modernDeps([target]);
    const res = await requestModern(deps, 'tools/call', { name: 'modern___x' }, { headers: { 'mcp-name': 'other' } });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ id: 'req-1', error: { code: -32020 } });
    const ping = await requestModern(deps, 'ping');
    expect(ping.status).toBe(404);
    expect(await ping.json()).toMatchObject({ error: { code: -32601 } });
    expect(target.calls).toEqual([]);
  });

  it('reaches a target as a 2026-07-28 caller with the capabilities and log level of this request', async () => {
    const target = fakeTarget('modern');
    const { deps } = modernDeps([target]);
    const capabilities = { elicitation: { form: {} } };
    await requestModern(
      deps,
      'tools/call',
      { name: 'modern___x' },
      { capabilities, meta: { [META_KEYS.logLevel]: 'warning' } },
    );
    expect(target.calls[0]?.caller).toMatchObject({
      era: 'modern',
      protocolVersion: '2026-07-28',
      capabilities,
      inputCapable: true,
      logLevel: 'warning',
    });
  });

  it("pools a caller's 2025 target sessions by principal and what can be relayed of its capabilities", async () => {
    const target = fakeTarget('modern');
    const { deps } = modernDeps([target]);
    const form = { elicitation: { form: {} } };
    await requestModern(deps, 'tools/call', { name: 'modern___x' }, { capabilities: form });
    await requestModern(
      deps,
      'tools/call',
      { name: 'modern___x' },
      { capabilities: { ...form, experimental: { x: {} } } },
    );
    await requestModern(deps, 'tools/call', { name: 'modern___x' }, { capabilities: form, principal: 'bob' });
    await requestModern(deps, 'tools/call', { name: 'modern___x' }, { capabilities: {} });
    const scopes = target.calls.map((c) => c.caller.sessions.scope);
    expect(scopes[1]).toBe(scopes[0]);
    expect(new Set([scopes[0], scopes[2], scopes[3]]).size).toBe(3);
  });

  it('names the gateway as the server of every result', async () => {
    const { deps } = modernDeps([fakeTarget('modern')]);
    const body = await (await requestModern(deps, 'server/discover')).json();
    expect(body.result).toMatchObject({ resultType: 'complete', _meta: { [META_KEYS.serverInfo]: SERVER_INFO } });
  });

  it('answers a request that ran out of time with 504, not an internal error', async () => {
    const target = fakeTarget('modern', {
      handle: async () => {
        throw Object.assign(new Error('timed out'), { name: 'TimeoutError' });
      },
    });
    const { deps } = modernDeps([target]);
    const res = await requestModern(deps, 'completion/complete', {
      ref: { type: 'ref/prompt', name: 'modern___greet' },
      argument: { name: 'a', value: 'b' },
    });
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ id: 'req-1', error: { code: -32603 } });
  });

  it('answers an unexpected failure with 500 and a bare internal error', async () => {
    const target = fakeTarget('modern', {
      handle: async () => {
        throw new Error('secret detail');
      },
    });
    const { deps } = modernDeps([target]);
    const res = await requestModern(deps, 'completion/complete', {
      ref: { type: 'ref/prompt', name: 'modern___greet' },
    });
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body.error.message).toBe('Internal error');
    expect(JSON.stringify(body)).not.toContain('secret detail');
  });

  it('leaves no deadline timer behind once answered', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const { deps } = modernDeps([fakeTarget('modern')]);
      await (await requestModern(deps, 'tools/list')).json();
      await (await postModern(deps, { kind: 'request', message: modernRequestMessage('server/discover') })).json();
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
