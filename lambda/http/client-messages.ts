import { recordSentError } from '../observability/metrics';
import { noteClientMessage } from '../observability/request-context';

/**
 * Every JSON-RPC message the gateway sends to the client passes here, once, as it is written
 * (`jsonResponse`, and the SSE writer's `send`/`end`): the request's record learns what the client got
 * (its error code, the input requests it was asked: the access log), and an error the gateway authored
 * is counted (`GatewayErrors`). Building a message has no such effect; sending it has these two, named here.
 */
export function observeClientMessage(message: unknown): void {
  noteClientMessage(message);
  recordSentError(message);
}
