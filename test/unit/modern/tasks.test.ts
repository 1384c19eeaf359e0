import type { ModernDeps } from '../../../lambda/modern/deps';
import { relayTaskRequest } from '../../../lambda/modern/tasks';
import type { ModernRequest } from '../../../lambda/modern/validate';
import { httpStatusOf } from '../../../lambda/protocol/errors';
import { TASKS_EXTENSION } from '../../../lambda/protocol/meta';
import type { ModernClientCapabilities } from '../../../lambda/protocol/types';
import { fakeTarget, modernCaller, modernDeps, refusal } from '../../support/modern-deps';

/**
 * The Tasks extension's requests (modern/tasks.ts): the gateway's task id opened first — made up,
 * altered, another principal's or expired → -32602 in-band, no target called — then relayed to the
 * task's target with its own id, and the answer returned with the gateway's.
 */

/** The sealed text with its last two characters changed (never to what they were). */
const altered = (sealed: string) => `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'BB' : 'AA'}`;

const PRINCIPAL = 'alice';
const TASKS = { extensions: { [TASKS_EXTENSION]: {} } } as ModernClientCapabilities;

function request(
  method: string,
  params: Record<string, unknown>,
  caps: ModernClientCapabilities = TASKS,
): ModernRequest {
  return { id: 'c-9', method, params, protocolVersion: '2026-07-28', clientCapabilities: caps };
}

const relay = (deps: ModernDeps, req: ModernRequest, principal = PRINCIPAL) =>
  relayTaskRequest(
    deps,
    req,
    principal,
    modernCaller(deps, principal, req.clientCapabilities),
    new AbortController().signal,
  );

function setup(now = () => Date.now()) {
  const target = fakeTarget('modern', {
    handle: async (req) => ({
      jsonrpc: '2.0',
      id: 0,
      result: { taskId: req.params.taskId, status: 'working', pollIntervalMs: 500, resultType: 'complete' },
    }),
  });
  const other = fakeTarget('other');
  const { deps } = modernDeps([target, other], { now });
  const gatewayId = deps.taskIds.seal({ target: 'modern', taskId: 'task-7', principal: PRINCIPAL }, { ttlMs: 60_000 });
  return { deps, target, other, gatewayId };
}

describe('a task request', () => {
  it("reaches the task's target with the target's own id, without the client's _meta, and comes back with the gateway's id", async () => {
    const { deps, target, other, gatewayId } = setup();
    const response = await relay(deps, request('tasks/get', { taskId: gatewayId, _meta: { x: 1 } }));
    expect(target.calls.map((c) => c.request)).toEqual([{ method: 'tasks/get', params: { taskId: 'task-7' } }]);
    expect(other.calls).toEqual([]);
    expect(response).toEqual({
      jsonrpc: '2.0',
      id: 'c-9',
      result: { taskId: gatewayId, status: 'working', pollIntervalMs: 500, resultType: 'complete' },
    });
  });

  it("passes tasks/update's inputResponses to the target untouched", async () => {
    const { deps, target, gatewayId } = setup();
    const inputResponses = { 'their-key': { action: 'accept', content: { a: 1 } } };
    await relay(deps, request('tasks/update', { taskId: gatewayId, inputResponses }));
    expect(target.calls[0]?.request.params).toEqual({ taskId: 'task-7', inputResponses });
  });

  it("relays the target's error in-band with the client's id, but its -32021 as a refusal of the request (400)", async () => {
    const { deps, target, gatewayId } = setup();
    target.handle = async () => ({ jsonrpc: '2.0', id: 0, error: { code: -32603, message: 'task failed' } });
    expect(await relay(deps, request('tasks/cancel', { taskId: gatewayId }))).toEqual({
      jsonrpc: '2.0',
      id: 'c-9',
      error: { code: -32603, message: 'task failed' },
    });
    target.handle = async () => ({
      jsonrpc: '2.0',
      id: 0,
      error: { code: -32021, message: 'need form', data: { requiredCapabilities: { elicitation: {} } } },
    });
    const error = await refusal(relay(deps, request('tasks/get', { taskId: gatewayId })));
    expect([error.kind, httpStatusOf(error), error.data]).toEqual([
      'MissingCapability',
      400,
      { requiredCapabilities: { elicitation: {} } },
    ]);
  });
});

describe('a task request refused before any target is called', () => {
  it('without the Tasks extension declared: -32021 naming it', async () => {
    const { deps, target, gatewayId } = setup();
    const error = await refusal(relay(deps, request('tasks/get', { taskId: gatewayId }, {})));
    expect([error.kind, error.data]).toEqual([
      'MissingCapability',
      { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    ]);
    expect(target.calls).toEqual([]);
  });

  it('without a string taskId: -32602', async () => {
    const { deps } = setup();
    expect((await refusal(relay(deps, request('tasks/get', { taskId: 7 })))).kind).toBe('InvalidParams');
  });

  it("for a made-up, altered or another principal's id: -32602 in-band, reason unknown", async () => {
    const { deps, target, gatewayId } = setup();
    for (const [taskId, principal] of [
      ['task-7', PRINCIPAL],
      [altered(gatewayId), PRINCIPAL],
      [gatewayId, 'mallory'],
    ] as const) {
      const error = await refusal(relay(deps, request('tasks/get', { taskId }), principal));
      expect([error.kind, error.spec.code, httpStatusOf(error), error.data]).toEqual([
        'InvalidParams',
        -32602,
        200,
        { reason: 'unknown' },
      ]);
    }
    expect(target.calls).toEqual([]);
  });

  it('for an id past its time: -32602, reason expired', async () => {
    let now = Date.now();
    const { deps, target, gatewayId } = setup(() => now);
    now += 61_000;
    const error = await refusal(relay(deps, request('tasks/get', { taskId: gatewayId })));
    expect([error.kind, error.data]).toEqual(['InvalidParams', { reason: 'expired' }]);
    expect(target.calls).toEqual([]);
  });

  it('for a task of a target no longer configured: -32602, reason unknown', async () => {
    const { deps } = setup();
    const gone = deps.taskIds.seal({ target: 'removed', taskId: 't', principal: PRINCIPAL }, {});
    const error = await refusal(relay(deps, request('tasks/get', { taskId: gone })));
    expect([error.kind, error.data]).toEqual(['InvalidParams', { reason: 'unknown' }]);
  });
});
