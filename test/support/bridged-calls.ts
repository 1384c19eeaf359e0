import { type Json, post, sseEvents } from './mcp-http';

/**
 * Raw 2026-07-28 calls of a 2025-only target's tool that asks for input (the bridged path): the first
 * message of the response — the round held on an SSE stream stays open until the call is over, so the
 * rest is not read.
 */

export const FORM_CAPS = { elicitation: { form: {} } };
export const ACCEPT_OK = { action: 'accept', content: { ok: true } };

export async function bridgedCall(
  url: string,
  call: { id: string; name: string; args: Json; extra?: Json; timeoutMs?: number },
): Promise<{ status: number; message: Json }> {
  const res = await post(
    url,
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': call.name },
    {
      jsonrpc: '2.0',
      id: call.id,
      method: 'tools/call',
      params: {
        name: call.name,
        arguments: call.args,
        ...call.extra,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': FORM_CAPS,
        },
      },
    },
    AbortSignal.timeout(call.timeoutMs ?? 20_000),
  );
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream'))
    return { status: res.status, message: (await res.json()) as Json };
  for await (const event of sseEvents(res)) if (event.message) return { status: res.status, message: event.message };
  throw new Error('no message');
}

/** Every request of an input_required round answered with `answer`. */
export const answersOf = (round: Json, answer: Json = ACCEPT_OK): Json =>
  Object.fromEntries(Object.keys(round.result.inputRequests).map((key) => [key, answer]));

/** The `extra` params of the retry of `round` answering every request. */
export const retryOf = (round: Json, answer: Json = ACCEPT_OK): Json => ({
  inputResponses: answersOf(round, answer),
  requestState: round.result.requestState,
});
