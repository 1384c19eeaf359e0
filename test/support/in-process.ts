import { buildGatewayDeps } from '../../lambda/app/bootstrap';
import type { GatewayDeps } from '../../lambda/app/deps';
import { createGateway } from '../../lambda/app/gateway';
import { type GatewayConfigInput, parseConfig } from '../../lambda/config/schema';
import type { ExchangeContext, FetchHandler } from '../../lambda/http/exchange';
import type { GatewayLogger } from '../../lambda/observability/logger';
import type { Clock } from '../../lambda/scheduling/clock';
import type { ConnectionTable } from '../../lambda/state/connection-table';
import { JSON_AND_SSE, type Json, type RelayedCall, readMessage, relayedCallOf, sseEvents } from './mcp-http';
import { MemorySessionStore } from './memory-store';

/**
 * The gateway core in this process: `buildGatewayDeps` + `createGateway` with the in-memory session
 * store, called with a web `Request` and an `ExchangeContext` — no HTTP server, no adapter. Targets
 * stay real MCP servers on loopback. `another()` is a second core on the same store, as a second Lambda
 * instance shares the table.
 */

/** The URL requests carry; nothing listens there (the request never leaves the process). */
export const IN_PROCESS_URL = 'http://gateway.invalid/mcp';

export const QUIET: GatewayLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

export interface InProcessOptions {
  store?: MemorySessionStore;
  logger?: GatewayLogger;
  keepAliveMs?: number;
  /** How long each request may run (the exchange's deadline, as the Lambda adapter derives it); default 30 s. */
  deadlineMs?: number;
  /** The gateway's clock, the memory store's too (test/support/fake-clock.ts drives one); default Node's. */
  clock?: Clock;
  /** Where per-user connections are kept (targets with `userOAuth`). */
  connectionTable?: ConnectionTable;
}

/** What one request adds to the exchange: the client's abort signal, a deadline, a platform principal. */
export interface ExchangeOptions {
  signal?: AbortSignal;
  deadlineMs?: number;
  platformPrincipal?: string;
}

export interface InProcessGateway {
  readonly store: MemorySessionStore;
  readonly deps: GatewayDeps;
  readonly handler: FetchHandler;
  /** Any request, as an adapter would hand it over. */
  fetch(path: string, init?: RequestInit, exchange?: ExchangeOptions): Promise<Response>;
  /** A JSON POST to /mcp with the headers every MCP client sends. */
  post(headers: Record<string, string>, body: unknown, exchange?: ExchangeOptions): Promise<Response>;
  /** POST and read the one JSON-RPC message of the answer (JSON or SSE). */
  call(headers: Record<string, string>, id: number | string, method: string, params?: Json): Promise<Json>;
  /** Initializes a 2025-era session; returns the headers later requests carry. */
  initSession(options?: {
    protocolVersion?: string;
    capabilities?: Json;
  }): Promise<{ sessionId: string; headers: Record<string, string>; result: Json }>;
  /** A second gateway core (its own deps and caches) on the same session store. */
  another(): InProcessGateway;
}

export function inProcessGateway(config: GatewayConfigInput, options: InProcessOptions = {}): InProcessGateway {
  const store = options.store ?? new MemorySessionStore(options.clock);
  const parsed = parseConfig({ logLevel: 'SILENT', ...config });
  const deps = buildGatewayDeps(parsed, {
    store,
    logger: options.logger ?? QUIET,
    keepAliveMs: options.keepAliveMs,
    clock: options.clock,
    connectionTable: options.connectionTable,
  });
  const handler = createGateway(deps);

  const fetchIn = (path: string, init: RequestInit = {}, exchange: ExchangeOptions = {}) => {
    const context: ExchangeContext = {
      signal: exchange.signal ?? new AbortController().signal,
      deadline: (options.clock?.now() ?? Date.now()) + (exchange.deadlineMs ?? options.deadlineMs ?? 30_000),
      platformPrincipal: exchange.platformPrincipal,
    };
    return handler(new Request(new URL(path, IN_PROCESS_URL), init), context);
  };
  const post = (headers: Record<string, string>, body: unknown, exchange?: ExchangeOptions) =>
    fetchIn(
      '/mcp',
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: JSON_AND_SSE, ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      },
      exchange,
    );

  return {
    store,
    deps,
    handler,
    fetch: fetchIn,
    post,
    call: async (headers, id, method, params) =>
      readMessage(await post(headers, { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) })),
    async initSession(init = {}) {
      const res = await post(
        {},
        {
          jsonrpc: '2.0',
          id: 'init',
          method: 'initialize',
          params: {
            protocolVersion: init.protocolVersion ?? '2025-11-25',
            capabilities: init.capabilities ?? {},
            clientInfo: { name: 'in-process', version: '1.0.0' },
          },
        },
      );
      if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status} ${await res.text()}`);
      const sessionId = res.headers.get('mcp-session-id')!;
      const { result } = await readMessage(res);
      return {
        sessionId,
        result,
        headers: { 'mcp-session-id': sessionId, 'mcp-protocol-version': result.protocolVersion },
      };
    },
    another: () => inProcessGateway(config, { ...options, store }),
  };
}

/**
 * Calls a tool over SSE on `gateway` and answers every server request on the stream with
 * `answer(request)`, POSTed as a separate request to `answerTo` (default the same core): the
 * in-process twin of `callAndAnswer` in mcp-http.ts.
 */
export async function callAndAnswerIn(
  gateway: InProcessGateway,
  headers: Record<string, string>,
  request: { id: string | number; method?: string; params: Json },
  answer: (serverRequest: Json) => Json | Promise<Json>,
  options: { answerTo?: InProcessGateway; exchange?: ExchangeOptions } = {},
): Promise<RelayedCall> {
  const res = await gateway.post(
    headers,
    { jsonrpc: '2.0', id: request.id, method: request.method ?? 'tools/call', params: request.params },
    options.exchange,
  );
  const result = relayedCallOf(res);
  for await (const event of sseEvents(res)) {
    if (event.comment !== undefined) result.comments++;
    const message = event.message;
    if (!message) continue;
    result.messages.push(message);
    if (message.method && message.id !== undefined) {
      const answerRes = await (options.answerTo ?? gateway).post(headers, {
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
