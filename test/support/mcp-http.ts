import { createParser } from 'eventsource-parser';

/** Raw HTTP helpers, used the way the reference page's samples use `requests` and `sseclient`. */

export type Json = Record<string, any>; // test-side JSON access

export const JSON_AND_SSE = 'application/json, text/event-stream';

export async function post(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: JSON_AND_SSE, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
}

/**
 * `post`, as a client honouring the gateway's retryable 503 (the store's bound passed) does: the request
 * was not taken, so it is sent again after `retryAfterSeconds`, up to `attempts` times.
 */
export async function postRetrying(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  attempts = 5,
): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const res = await post(url, headers, body);
    if (res.status !== 503 || attempt >= attempts) return res;
    const text = await res.text();
    if (!/"retryable":true/.test(text)) return new Response(text, { status: res.status, headers: res.headers });
    await waitRetryAfter(text);
  }
}

/**
 * Waits what a retryable refusal's body asks (`retryAfterSeconds`, else 1 s): the protocol's own
 * duration, which a client honours, not a stand-in for an event.
 */
async function waitRetryAfter(refusal: string): Promise<void> {
  const after = Number(/"retryAfterSeconds":(\d+)/.exec(refusal)?.[1] ?? 1);
  await new Promise((resolve) => setTimeout(resolve, after * 1000));
}

/** Initializes a 2025-era session; returns the headers later requests carry. */
export async function initSession(
  url: string,
  options: {
    protocolVersion?: string;
    capabilities?: Json;
    headers?: Record<string, string>;
    clientInfo?: { name: string; version: string };
  } = {},
): Promise<{ sessionId: string; headers: Record<string, string>; result: Json }> {
  const protocolVersion = options.protocolVersion ?? '2025-11-25';
  const res = await post(url, options.headers ?? {}, {
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: {
      protocolVersion,
      capabilities: options.capabilities ?? {},
      clientInfo: options.clientInfo ?? { name: 'test', version: '1.0.0' },
    },
  });
  if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status} ${await res.text()}`);
  const sessionId = res.headers.get('mcp-session-id')!;
  const body = await readMessage(res);
  return {
    sessionId,
    result: body.result,
    headers: {
      ...(options.headers ?? {}),
      'mcp-session-id': sessionId,
      'mcp-protocol-version': body.result.protocolVersion,
    },
  };
}

/**
 * `initSession` as a client that honours the gateway's retryable 503 does (its `retryAfterSeconds`,
 * at most `attempts` tries): for tests that open many sessions at once on one dynalite, whose writes
 * on a loaded machine can outlast the store's bounds. Any other failure, or the last 503, is thrown.
 */
export async function initSessionRetrying(
  url: string,
  options: Parameters<typeof initSession>[1] = {},
  attempts = 5,
): Promise<Awaited<ReturnType<typeof initSession>>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await initSession(url, options);
    } catch (error) {
      const retryable = /HTTP 503 .*"retryable":true/.exec(String(error));
      if (attempt >= attempts || !retryable) throw error;
      await waitRetryAfter(String(error));
    }
  }
}

/** The one JSON-RPC message of a JSON or single-event SSE response. */
/**
 * The first message with an id (a response, or a request the server asks first): notifications before it
 * (a target's log messages, progress) are skipped, as a client hands them to its handlers.
 */
export async function readMessage(res: Response): Promise<Json> {
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    for await (const event of sseEvents(res)) if (event.message && 'id' in event.message) return event.message;
    throw new Error('SSE stream ended without a message');
  }
  return (await res.json()) as Json;
}

export interface SseEvent {
  message?: Json;
  comment?: string;
  /** The event's id (resumable streams). */
  id?: string;
}

/** SSE events as they arrive (messages parsed, comments reported); a JSON answer is one message. */
export async function* sseEvents(res: Response): AsyncGenerator<SseEvent> {
  if ((res.headers.get('content-type') ?? '').includes('application/json')) {
    yield { message: (await res.json()) as Json };
    return;
  }
  const queue: SseEvent[] = [];
  const parser = createParser({
    onEvent: (event) => {
      if (event.data) queue.push({ message: JSON.parse(event.data), ...(event.id ? { id: event.id } : {}) });
    },
    onComment: (comment) => queue.push({ comment }),
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      while (queue.length) yield queue.shift()!;
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
    while (queue.length) yield queue.shift()!;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** Lists the table's items of one session partition (to check what the gateway stored). */
export async function sessionItems(endpoint: string, sessionId: string, tableName = 'mcp-gateway'): Promise<Json[]> {
  const { createDocumentClient } = await import('../../lambda/state/dynamo-client');
  const { QueryCommand } = await import('@aws-sdk/lib-dynamodb');
  const client = createDocumentClient({ endpoint });
  const out = await client.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `S#${sessionId}` },
    }),
  );
  return (out.Items ?? []) as Json[];
}

export interface RelayedCall {
  /** Every message on the call's stream, in order. */
  messages: Json[];
  /** The final response. */
  response: Json;
  /** HTTP statuses of the answers POSTed. */
  answerStatuses: number[];
  comments: number;
  /** The call was answered as an SSE stream (else as one JSON body). */
  streamed: boolean;
}

/** A relayed call's record before its stream is read: nothing seen yet, and how it was answered. */
export function relayedCallOf(res: Response): RelayedCall {
  return {
    messages: [],
    response: {},
    answerStatuses: [],
    comments: 0,
    streamed: (res.headers.get('content-type') ?? '').includes('text/event-stream'),
  };
}

/**
 * Calls a tool over SSE and answers every server request on it with `answer(request)`, POSTed
 * as a separate request (optionally to another gateway URL, as another Lambda instance would get it).
 */
export async function callAndAnswer(
  url: string,
  headers: Record<string, string>,
  request: { id: string | number; method?: string; params: Json },
  answer: (serverRequest: Json) => Json | Promise<Json>,
  options: { answerUrl?: string; signal?: AbortSignal } = {},
): Promise<RelayedCall> {
  const res = await post(
    url,
    headers,
    { jsonrpc: '2.0', id: request.id, method: request.method ?? 'tools/call', params: request.params },
    options.signal,
  );
  const result = relayedCallOf(res);
  for await (const event of sseEvents(res)) {
    if (event.comment !== undefined) result.comments++;
    const message = event.message;
    if (!message) continue;
    result.messages.push(message);
    if (message.method && message.id !== undefined) {
      const answerRes = await post(options.answerUrl ?? url, headers, {
        jsonrpc: '2.0',
        id: message.id,
        ...(await answer(message)),
      });
      result.answerStatuses.push(answerRes.status);
      await answerRes.body?.cancel();
    } else if (message.id === request.id) {
      result.response = message;
      break;
    }
  }
  return result;
}

/** Waits until `check` passes (bounded), for effects that happen after a response was sent. */
export async function eventually(check: () => Promise<void> | void, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > until) throw error;
      // The poll of this helper: what the check reads has no event to wait on in general.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
