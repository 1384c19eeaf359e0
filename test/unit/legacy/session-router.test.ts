import { ANONYMOUS_IDENTITY } from '../../../lambda/auth/identity';
import { handleSessionMessage } from '../../../lambda/legacy/session-router';
import { DependencyFailedError } from '../../../lambda/protocol/errors';
import type { ClientMessage } from '../../../lambda/protocol/jsonrpc';
import { exchange, legacyDeps, storedSession } from '../../support/legacy-deps';

/**
 * Every message of a loaded session but answers (legacy/session-router.ts): looked up in the era's
 * routing table; an unknown method is -32601 in-band; a failure is answered in-band or, when its
 * kind has a status of its own, as that HTTP error; failures worth looking at are warned.
 */

async function route(message: ClientMessage, config: Parameters<typeof legacyDeps>[0] = {}) {
  const t = legacyDeps(config);
  const loaded = await storedSession(t.store);
  const response = await handleSessionMessage(
    {
      deps: t.deps,
      identity: ANONYMOUS_IDENTITY,
      loaded,
      accept: { json: true, sse: true },
      exchange: exchange(),
      headers: { 'mcp-session-id': loaded.session.id },
    },
    message as Exclude<ClientMessage, { kind: 'response' }>,
  );
  return { ...t, loaded, response };
}

const requestOf = (method: string, params?: Record<string, unknown>): ClientMessage => ({
  kind: 'request',
  message: { jsonrpc: '2.0', id: 11, method, ...(params ? { params } : {}) },
});

describe('a message within a session', () => {
  it('a notification is accepted: 202 with the session id and no body', async () => {
    const { response, loaded } = await route({
      kind: 'notification',
      message: { jsonrpc: '2.0', method: 'notifications/initialized' },
    });
    expect(response.status).toBe(202);
    expect(response.headers.get('mcp-session-id')).toBe(loaded.session.id);
    expect(await response.text()).toBe('');
  });

  it('ping is answered by the gateway with an empty result', async () => {
    const { response, fake } = await route(requestOf('ping'));
    expect(await response.json()).toEqual({ jsonrpc: '2.0', id: 11, result: {} });
    expect(fake.opened).toEqual([]);
  });

  it('an unknown method is -32601 in-band (HTTP 200), and not warned', async () => {
    const { response, logger } = await route(requestOf('tools/frobnicate'));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      id: 11,
      error: { code: -32601, message: 'Method not found: tools/frobnicate' },
    });
    expect(logger.messages('warn')).toEqual([]);
  });

  it('a failure whose kind has a status of its own is that HTTP error: initialize again is 400', async () => {
    const { response } = await route(requestOf('initialize', { protocolVersion: '2025-11-25', capabilities: {} }));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ id: 11, error: { code: -32600 } });
  });

  it("a target's failure is in-band, retryable, and warned with the method", async () => {
    const t = await route(requestOf('ping'));
    t.deps.catalog.aggregate = async () => {
      throw new DependencyFailedError('demo', 'HTTP 502');
    };
    const response = await handleSessionMessage(
      {
        deps: t.deps,
        identity: ANONYMOUS_IDENTITY,
        loaded: t.loaded,
        accept: { json: true, sse: true },
        exchange: exchange(),
        headers: {},
      },
      requestOf('tools/list') as Exclude<ClientMessage, { kind: 'response' }>,
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ error: { code: -32603, data: { retryable: true } } });
    expect(t.logger.lines.filter((l) => l.level === 'warn')).toEqual([
      expect.objectContaining({ message: 'request failed', extra: expect.objectContaining({ method: 'tools/list' }) }),
    ]);
  });

  it('answers an SSE-only client in a stream', async () => {
    const t = legacyDeps();
    const loaded = await storedSession(t.store);
    const response = await handleSessionMessage(
      {
        deps: t.deps,
        identity: ANONYMOUS_IDENTITY,
        loaded,
        accept: { json: false, sse: true },
        exchange: exchange(),
        headers: {},
      },
      requestOf('ping') as Exclude<ClientMessage, { kind: 'response' }>,
    );
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(await response.text()).toContain('"result":{}');
  });
});
