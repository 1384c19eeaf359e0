import { mapResponse, type OutcomeContext } from '../../../lambda/modern/outcome';
import { GatewayError, httpStatusOf } from '../../../lambda/protocol/errors';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';

/**
 * What a 2026-07-28 client gets of a target's response (modern/outcome.ts): input rounds with the
 * target's state sealed in the gateway's, -32042 as a URL round, the target's 400-class refusals kept at
 * 400, a task with the gateway's id, and complete results typed (a read resource's cache hints).
 */

const ok = (result: Record<string, unknown>): JSONRPCResponse => ({ jsonrpc: '2.0', id: 9, result });
const failed = (code: number, message = 'no', data?: unknown): JSONRPCResponse =>
  ({ jsonrpc: '2.0', id: 9, error: { code, message, ...(data !== undefined ? { data } : {}) } }) as JSONRPCResponse;

function context(change: Partial<OutcomeContext> = {}) {
  const sealed: unknown[] = [];
  const ctx: OutcomeContext = {
    caps: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} },
    era: 'modern',
    method: 'tools/call',
    target: 'modern-target',
    sealRelay: (state) => {
      sealed.push(state);
      return 'gw1.relay';
    },
    sealReissue: () => 'gw1.reissue',
    isRetry: false,
    ...change,
  };
  return { ctx, sealed };
}

const thrown = (fn: () => unknown): GatewayError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a GatewayError');
};

describe('an input_required answer', () => {
  it("goes back with inputRequests untouched and the target's state sealed in the gateway's", () => {
    const { ctx, sealed } = context();
    const inputRequests = {
      ask: { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object' } } },
    };
    const mapped = mapResponse(ok({ resultType: 'input_required', inputRequests, requestState: 'target-state' }), ctx);
    expect(mapped).toEqual({
      jsonrpc: '2.0',
      id: 9,
      result: { resultType: 'input_required', inputRequests, requestState: 'gw1.relay' },
    });
    expect(sealed).toEqual(['target-state']);
  });

  it('is refused with -32021 naming every capability the client did not declare (HTTP 400)', () => {
    const { ctx } = context({ caps: { elicitation: { form: {} } } });
    const error = thrown(() =>
      mapResponse(
        ok({
          resultType: 'input_required',
          inputRequests: {
            a: { method: 'elicitation/create', params: { mode: 'url', url: 'https://x', message: 'go' } },
            b: { method: 'sampling/createMessage', params: { messages: [], maxTokens: 1 } },
          },
        }),
        ctx,
      ),
    );
    expect(error.kind).toBe('MissingCapability');
    expect(httpStatusOf(error)).toBe(400);
    expect(error.data).toEqual({ requiredCapabilities: { elicitation: { url: {} }, sampling: {} } });
  });

  it("is the target's protocol error when it asks for something that is not an input request", () => {
    const { ctx } = context();
    const error = thrown(() =>
      mapResponse(ok({ resultType: 'input_required', inputRequests: { a: { method: 'tools/call' } } }), ctx),
    );
    expect(error.kind).toBe('DependencyFailed');
    expect(error.message).toContain('unknown input request tools/call');
  });
});

describe("a target's -32042 (URL elicitation required)", () => {
  const data = {
    elicitations: [
      { mode: 'url', elicitationId: 'e-1', url: 'https://auth.example/consent', message: 'Connect' },
      { url: 'https://other.example' },
      { message: 'no url' },
    ],
  };

  it('becomes an input_required URL round whose state re-issues the call; elicitationId and entries without a URL dropped', () => {
    const { ctx } = context();
    expect(mapResponse(failed(-32042, 'needs url', data), ctx)).toEqual({
      jsonrpc: '2.0',
      id: 9,
      result: {
        resultType: 'input_required',
        inputRequests: {
          url_0: {
            method: 'elicitation/create',
            params: { mode: 'url', message: 'Connect', url: 'https://auth.example/consent' },
          },
          url_1: {
            method: 'elicitation/create',
            params: { mode: 'url', message: 'Open this URL to continue', url: 'https://other.example' },
          },
        },
        requestState: 'gw1.reissue',
      },
    });
  });

  it('is -32021 naming elicitation.url for a client that did not declare it, from a target of either era', () => {
    for (const era of ['legacy', 'modern'] as const) {
      const { ctx } = context({ era, caps: { elicitation: {} } });
      const error = thrown(() => mapResponse(failed(-32042, 'needs url', data), ctx));
      expect(error.kind).toBe('MissingCapability');
      expect(error.data).toEqual({ requiredCapabilities: { elicitation: { url: {} } } });
    }
  });
  it("is the target's failure, naming it, when no elicitation carries a usable URL (an empty round's retry would only ask again)", () => {
    for (const elicitations of [[], [{ message: 'no url' }, { url: '' }, { url: 'not a url' }, { url: 42 }]]) {
      const { ctx } = context();
      const error = thrown(() => mapResponse(failed(-32042, 'needs url', { elicitations }), ctx));
      expect(error.kind).toBe('DependencyFailed');
      expect(error.message).toContain('modern-target');
      expect(error.message).toContain('-32042');
    }
    const error = thrown(() => mapResponse(failed(-32042, 'needs url'), context().ctx));
    expect(error.kind).toBe('DependencyFailed');
  });
});

describe("a target's error", () => {
  it('-32002 (resource not found) becomes -32602, never sent as -32002', () => {
    const error = thrown(() => mapResponse(failed(-32002, 'Resource not found', { uri: 'x://y' }), context().ctx));
    expect({ kind: error.kind, code: error.spec.code, message: error.message, data: error.data }).toEqual({
      kind: 'InvalidParams',
      code: -32602,
      message: 'Resource not found',
      data: { uri: 'x://y' },
    });
  });

  it('-32021 and -32020 keep HTTP 400 with their data', () => {
    const missing = thrown(() =>
      mapResponse(failed(-32021, 'need roots', { requiredCapabilities: { roots: {} } }), context().ctx),
    );
    expect([missing.kind, httpStatusOf(missing), missing.data]).toEqual([
      'MissingCapability',
      400,
      { requiredCapabilities: { roots: {} } },
    ]);
    const header = thrown(() => mapResponse(failed(-32020, 'Mcp-Param-Region mismatch'), context().ctx));
    expect([header.kind, httpStatusOf(header), header.message]).toEqual([
      'HeaderMismatch',
      400,
      'Mcp-Param-Region mismatch',
    ]);
  });

  it('anything else is relayed in-band as the target sent it', () => {
    const response = failed(-32603, 'boom', { detail: 1 });
    expect(mapResponse(response, context().ctx)).toBe(response);
  });
});

describe("a target's task (Tasks extension)", () => {
  const task = { resultType: 'task', taskId: 't-1', status: 'working', pollIntervalMs: 500, ttlMs: 60_000 };

  it("goes back as it is but for the gateway's task id", () => {
    const seen: Record<string, unknown>[] = [];
    const { ctx } = context({
      sealTask: (t) => {
        seen.push(t);
        return 'gw1.task';
      },
    });
    expect(mapResponse(ok(task), ctx)).toEqual({ jsonrpc: '2.0', id: 9, result: { ...task, taskId: 'gw1.task' } });
    expect(seen).toEqual([task]);
  });

  it("is the target's protocol error for a request that did not declare the extension, or without a taskId", () => {
    expect(thrown(() => mapResponse(ok(task), context().ctx)).message).toContain(
      'returned a task to a request that did not declare the Tasks extension',
    );
    const { ctx } = context({ sealTask: () => 'gw1.task' });
    const { taskId: _id, ...noId } = task;
    expect(thrown(() => mapResponse(ok(noId), ctx)).message).toContain('returned a task without a taskId');
  });
});

describe('a complete result', () => {
  it('names its type (complete when the target named none) and refuses a type it does not know', () => {
    expect(mapResponse(ok({ content: [] }), context().ctx)).toEqual({
      jsonrpc: '2.0',
      id: 9,
      result: { content: [], resultType: 'complete' },
    });
    expect(thrown(() => mapResponse(ok({ resultType: 'partial' }), context().ctx)).kind).toBe('DependencyFailed');
  });

  it("of resources/read keeps the target's cache hints, defaulting to ttl 0, private", () => {
    const { ctx } = context({ method: 'resources/read' });
    expect(mapResponse(ok({ contents: [], ttlMs: 5000, cacheScope: 'public' }), ctx)).toMatchObject({
      result: { ttlMs: 5000, cacheScope: 'public' },
    });
    expect(mapResponse(ok({ contents: [], cacheScope: 'everyone' }), ctx)).toMatchObject({
      result: { ttlMs: 0, cacheScope: 'private' },
    });
  });

  it('of resources/read that answered a retry (it carried input) is never cacheable', () => {
    const { ctx } = context({ method: 'resources/read', isRetry: true });
    expect(mapResponse(ok({ contents: [], ttlMs: 5000, cacheScope: 'public' }), ctx)).toMatchObject({
      result: { ttlMs: 0, cacheScope: 'private' },
    });
  });

  it('of tools/call gets no cache hints added', () => {
    const result = mapResponse(ok({ content: [] }), context().ctx);
    expect('result' in result && result.result).not.toHaveProperty('ttlMs');
  });
});
