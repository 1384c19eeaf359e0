import { randomUUID } from 'node:crypto';
import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, type LoggingLevel, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { ConsentBook, DEFAULT_CONSENT_TIMEOUT_MS } from './consent-book';
import { isConsentPath, serveConsentPage } from './consent-page';
import { MemoryEventStore } from './event-store';
import { createDemoSessionServer, type DemoToolsContext, LOG_LEVELS, type SessionContext } from './legacy-tools';
import { closeServer, hostForUrl, listen, loopbackHostHeaders } from './loopback-http';

/**
 * The 2025-era demo target's HTTP host: node:http, one official-SDK Streamable HTTP transport per
 * session, DNS-rebinding protection, stats for tests, and the consent page of its URL elicitations.
 * What the tools do is `legacy-tools.ts`. It is the built-in target `demo` of `npm start` and the
 * target of integration tests.
 */

export interface DemoTargetOptions {
  /** Interface to bind; default 127.0.0.1 (loopback only). */
  host?: string;
  /** Port; default 0 = a free port. */
  port?: number;
  /** serverInfo.name; default 'demo-target'. */
  name?: string;
  /** How long a URL-elicitation tool waits for its consent page after the client's `accept`; default 5 minutes. */
  consentTimeoutMs?: number;
  /**
   * A target that polls (SSE polling, MCP 2025-11-25): its sessions keep their events (an in-memory
   * event store: priming events, ids, replay after `Last-Event-ID`, the `retry` given), and a tool
   * that asks the client (elicitation, sampling, roots) first ends its call's POST stream, so the ask
   * and everything after it reach the client only on its reconnect. Off by default.
   */
  polling?: { retryMs: number };
}

export interface DemoTargetStats {
  /** Successful initialize requests (= sessions ever created). */
  initializeCount: number;
  /** TCP connections accepted (shows whether callers keep connections alive). */
  connections: number;
  /** GET requests of a session (its standalone stream; each holds a connection of its own until it ends). */
  getRequests: number;
  /** Live sessions. */
  sessions: number;
  /** Client-to-server JSON-RPC messages (requests and notifications) delivered to a session, by method. */
  requestsByMethod: Record<string, number>;
  /** Request ids named by the client's notifications/cancelled (any tool, running or not). */
  cancelledRequestIds: Array<string | number>;
}

export interface DemoTarget {
  /** http://127.0.0.1:PORT/mcp */
  url: string;
  close(): Promise<void>;
  /** For tests. Returns a snapshot. */
  stats(): DemoTargetStats;
  /** Forget (and close) all sessions: later requests with an old session id get 404 (to test re-initialization). */
  dropSessions(): void;
}

const MCP_PATH = '/mcp';
const MAX_BODY_BYTES = 4 * 1024 * 1024;

interface Session {
  transport: StreamableHTTPServerTransport;
  mcp: McpServer;
  ctx: SessionContext;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isLoggingLevel(v: unknown): v is LoggingLevel {
  return typeof v === 'string' && (LOG_LEVELS as readonly string[]).includes(v);
}

function sendJsonRpcError(
  res: ServerResponse,
  status: number,
  code: number,
  message: string,
  extraHeaders: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extraHeaders,
  });
  res.end(body);
}

/** Reads the request body; undefined if it exceeds MAX_BODY_BYTES. */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

interface MethodMessage {
  method: string;
  id?: unknown;
  params?: Record<string, unknown>;
}

function methodMessages(body: unknown): MethodMessage[] {
  const list: unknown[] = Array.isArray(body) ? body : [body];
  return list.filter(
    (m): m is MethodMessage =>
      typeof m === 'object' && m !== null && typeof (m as { method?: unknown }).method === 'string',
  );
}

export async function startDemoTarget(opts: DemoTargetOptions = {}): Promise<DemoTarget> {
  const host = opts.host ?? '127.0.0.1';
  const name = opts.name ?? 'demo-target';
  let initializeCount = 0;
  const requestsByMethod: Record<string, number> = {};
  const cancelledRequestIds: RequestId[] = [];
  const recordCancel = (id: RequestId): void => {
    if (!cancelledRequestIds.includes(id)) cancelledRequestIds.push(id);
  };
  /** Set once listening: the tools need the consent page's origin. */
  let tools: DemoToolsContext | undefined;
  /** Initialized sessions by id. */
  const sessions = new Map<string, Session>();
  /** Every open session, including one whose initialize is still being handled. */
  const live = new Set<Session>();
  let allowedHosts = new Set<string>();
  let closing: Promise<void> | undefined;

  const closeSession = async (session: Session): Promise<void> => {
    live.delete(session);
    for (const [id, s] of sessions) if (s === session) sessions.delete(id);
    // McpServer.close() closes the transport (ends its SSE streams) and aborts in-flight handlers.
    await session.mcp.close().catch(() => undefined);
  };

  const newSession = async (context: DemoToolsContext): Promise<Session> => {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      ...(opts.polling ? { eventStore: new MemoryEventStore(), retryInterval: opts.polling.retryMs } : {}),
      onsessioninitialized: (id) => {
        sessions.set(id, session);
        initializeCount++;
      },
    });
    const ctx: SessionContext = { closed: false };
    const session: Session = { transport, mcp: createDemoSessionServer(context, ctx), ctx };
    // Set before connect(): the SDK chains its own onclose after this one.
    transport.onclose = () => {
      ctx.closed = true;
      live.delete(session);
      const id = transport.sessionId;
      if (id !== undefined && sessions.get(id) === session) sessions.delete(id);
    };
    // Transport/protocol errors (client went away, stream closed) are expected in tests; nothing to log.
    session.mcp.server.onerror = () => undefined;
    live.add(session);
    await session.mcp.connect(transport);
    return session;
  };

  const countMessages = (session: Session, body: unknown): void => {
    for (const m of methodMessages(body)) {
      requestsByMethod[m.method] = (requestsByMethod[m.method] ?? 0) + 1;
      if (m.method === 'logging/setLevel' && isLoggingLevel(m.params?.level)) session.ctx.logLevel = m.params.level;
    }
  };

  /** After a cancellation the SDK never answers the request: end its POST stream so the socket is freed. */
  const closeCancelledStreams = (session: Session, body: unknown): void => {
    const ids: RequestId[] = [];
    for (const m of methodMessages(body)) {
      const rid = m.params?.requestId;
      if (m.method === 'notifications/cancelled' && (typeof rid === 'string' || typeof rid === 'number')) ids.push(rid);
    }
    if (ids.length === 0) return;
    for (const id of ids) recordCancel(id);
    setImmediate(() => {
      for (const id of ids) session.transport.closeSSEStream(id);
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const consentPage = isConsentPath(path);
    if (path !== MCP_PATH && !consentPage) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    // DNS-rebinding protection: only loopback Host headers for our port.
    if (!allowedHosts.has((req.headers.host ?? '').toLowerCase())) {
      sendJsonRpcError(res, 403, -32000, `Invalid Host header: ${req.headers.host ?? ''}`);
      return;
    }
    if (closing || !tools) {
      sendJsonRpcError(res, 503, -32000, 'Server is shutting down');
      return;
    }
    if (consentPage) return serveConsentPage(req, res, tools.consents, allowedHosts, name);
    const method = req.method ?? 'GET';
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      sendJsonRpcError(res, 405, -32000, 'Method not allowed.', { allow: 'GET, POST, DELETE' });
      return;
    }
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
    if (method === 'GET' && sessionId !== undefined) getRequests++;

    let body: unknown;
    if (method === 'POST') {
      const raw = await readBody(req);
      if (raw === undefined) {
        sendJsonRpcError(res, 413, -32000, `Payload too large (max ${MAX_BODY_BYTES} bytes)`);
        return;
      }
      try {
        body = JSON.parse(raw);
      } catch {
        sendJsonRpcError(res, 400, -32700, 'Parse error: Invalid JSON');
        return;
      }
    }

    if (sessionId !== undefined) {
      const session = sessions.get(sessionId);
      if (!session) {
        sendJsonRpcError(res, 404, -32001, 'Session not found');
        return;
      }
      if (method === 'POST') {
        countMessages(session, body);
        closeCancelledStreams(session, body);
      }
      await session.transport.handleRequest(req, res, body);
      return;
    }

    // No session id: only an initialize POST may open a new session.
    const isInit =
      method === 'POST' && (Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body));
    if (!isInit) {
      sendJsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      return;
    }
    const session = await newSession(tools);
    countMessages(session, body);
    await session.transport.handleRequest(req, res, body);
    // The transport rejected the initialize (bad headers, batch...): do not leak the half-made session.
    if (session.transport.sessionId === undefined) await closeSession(session);
  };

  const httpServer: HttpServer = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      sendJsonRpcError(res, 500, -32603, `Internal error: ${errorMessage(err)}`);
    });
  });
  // Long-lived SSE responses must not be cut by Node's default request timeout.
  httpServer.requestTimeout = 0;
  let connections = 0;
  let getRequests = 0;
  httpServer.on('connection', () => connections++);

  const port = await listen(httpServer, opts.port ?? 0, host);
  const origin = `http://${hostForUrl(host)}:${port}`;
  allowedHosts = loopbackHostHeaders(host, port);
  const consents = new ConsentBook(origin);
  tools = {
    name,
    consents,
    consentTimeoutMs: opts.consentTimeoutMs ?? DEFAULT_CONSENT_TIMEOUT_MS,
    authorizedResources: new Set(),
    pendingResources: new Map(),
    recordCancel,
    pollsWhileAsking: opts.polling !== undefined,
  };

  return {
    url: `${origin}${MCP_PATH}`,
    close(): Promise<void> {
      closing ??= (async () => {
        consents.close();
        await Promise.allSettled([...live].map((s) => closeSession(s)));
        await closeServer(httpServer);
      })();
      return closing;
    },
    stats(): DemoTargetStats {
      return {
        initializeCount,
        connections,
        getRequests,
        sessions: sessions.size,
        requestsByMethod: { ...requestsByMethod },
        cancelledRequestIds: [...cancelledRequestIds],
      };
    },
    dropSessions(): void {
      const all = [...live];
      sessions.clear();
      for (const s of all) void closeSession(s);
    },
  };
}
