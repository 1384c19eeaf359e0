import { RpcCode } from '../protocol/codes';
import { GatewayError } from '../protocol/errors';
import type { JSONRPCResponse } from '../protocol/jsonrpc';
import { declaresTasks } from '../protocol/meta';
import type { Caller } from '../targets/target-link';
import type { ModernDeps } from './deps';
import type { ModernRequest } from './validate';

/**
 * The Tasks extension's requests (`tasks/get`, `tasks/update`, `tasks/cancel`;
 * https://github.com/modelcontextprotocol/ext-tasks/blob/main/specification/draft/tasks.md), relayed to the target whose task it is. The task id the
 * client sends is the gateway's (../crypto/task-ids.ts): opened first — altered, made up, another principal's
 * or past its time → -32602, in-band as a server answers a task it does not know, and no target is called — then the request goes to that target
 * with the target's own id (and `Mcp-Name`, which mirrors it). What the target answers comes back as
 * it is (a status, `pollIntervalMs`, `inputRequests` with their keys, the final result or error),
 * with the gateway's id in place of the target's. `tasks/update` carries the client's
 * `inputResponses` untouched: their keys are the target's `inputRequests` keys. Nothing is stored.
 */
export async function relayTaskRequest(
  deps: ModernDeps,
  request: ModernRequest,
  principal: string,
  caller: Caller,
  signal: AbortSignal,
): Promise<JSONRPCResponse> {
  const gatewayTaskId = request.params.taskId;
  if (typeof gatewayTaskId !== 'string') {
    throw new GatewayError('InvalidParams', `Invalid params: ${request.method} needs params.taskId (a string)`);
  }
  // A client polling a task declares the extension (the spec: task requests are the extension's).
  if (!declaresTasks(request.clientCapabilities)) {
    throw new GatewayError(
      'MissingCapability',
      'Missing required client capability: declare the io.modelcontextprotocol/tasks extension in _meta io.modelcontextprotocol/clientCapabilities',
      { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
    );
  }
  const opened = deps.taskIds.open(gatewayTaskId, principal);
  if (!opened.ok) {
    deps.logger.info('task id refused', { method: request.method, reason: opened.reason });
    throw new GatewayError(
      'InvalidParams',
      opened.reason === 'expired'
        ? 'Invalid params: this task id has expired (the task outlived its ttlMs); call the tool again'
        : 'Invalid params: unknown task id (not issued by this gateway for this caller)',
      { reason: opened.reason === 'expired' ? 'expired' : 'unknown' },
    );
  }
  const { target, taskId } = opened.task;
  if (!deps.targets.names.includes(target)) {
    throw new GatewayError('InvalidParams', 'Invalid params: unknown task id (its target is no longer configured)', {
      reason: 'unknown',
    });
  }
  const { _meta: _clientMeta, ...params } = request.params;
  const targetLink = await deps.targets.open(target, caller, signal);
  const response = await targetLink.call({ method: request.method, params: { ...params, taskId } }, { signal });
  deps.logger.info('task request relayed', { method: request.method, target });
  if ('error' in response) {
    // As for tools/call (./outcome.ts): a target's missing-capability refusal is about the request (400).
    if (response.error.code === RpcCode.MissingRequiredClientCapability)
      throw new GatewayError('MissingCapability', response.error.message, response.error.data);
    return { ...response, id: request.id };
  }
  const result = { ...(response.result as Record<string, unknown>) };
  // The task as the client knows it: the gateway's id (tasks/get; update and cancel acknowledge).
  if (result.taskId !== undefined) result.taskId = gatewayTaskId;
  return { jsonrpc: '2.0', id: request.id, result };
}
