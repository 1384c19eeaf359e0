import { randomUUID } from 'node:crypto';
import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  CreateMessageResultSchema,
  type ElicitRequestFormParams,
  type ElicitRequestURLParams,
  type ElicitResult,
  ElicitResultSchema,
  isInitializeRequest,
  ListRootsResultSchema,
  type LoggingLevel,
  type RequestId,
  type ServerNotification,
  type ServerRequest,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/**
 * A real MCP server ("target") built with the official v1 SDK, served over Streamable HTTP on loopback.
 * It is the gateway's built-in demo target for `npm start` and the target of integration tests, so
 * every tool answers with deterministic text.
 *
 * Server-to-client requests (elicitation, sampling, roots) are always sent with
 * `relatedRequestId` = the tools/call request id, so the transport writes them on that tools/call
 * POST's SSE response stream, never on the standalone GET stream.
 */

export interface DemoTargetOptions {
  /** Interface to bind; default 127.0.0.1 (loopback only). */
  host?: string;
  /** Port; default 0 = a free port. */
  port?: number;
  /** serverInfo.name; default 'demo-target'. */
  name?: string;
}

export interface DemoTargetStats {
  /** Successful initialize requests (= sessions ever created). */
  initializeCount: number;
  /** TCP connections accepted (shows whether callers keep connections alive). */
  connections: number;
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
/** Server-to-client requests may wait for a human (elicitation), so allow longer than the SDK's 60 s default. */
const CLIENT_REQUEST_TIMEOUT_MS = 10 * 60 * 1000;
const LOG_LEVELS: readonly LoggingLevel[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Per-session state the tools read. */
interface SessionContext {
  /** Set when the transport closes, before the SDK aborts in-flight handlers (so those aborts are not "cancellations"). */
  closed: boolean;
  /** Level set by logging/setLevel; undefined = send everything. */
  logLevel?: LoggingLevel;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  mcp: McpServer;
  ctx: SessionContext;
}

interface TargetState {
  name: string;
  initializeCount: number;
  requestsByMethod: Record<string, number>;
  cancelledRequestIds: Array<string | number>;
  /** Resources authorized through `url_required` (global to this target instance). */
  authorizedResources: Set<string>;
}

function text(t: string): CallToolResult {
  return { content: [{ type: 'text', text: t }] };
}

function errorText(t: string): CallToolResult {
  return { content: [{ type: 'text', text: t }], isError: true };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Resolves true after ms, or false as soon as signal aborts; never leaves a timer behind. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function isLoggingLevel(v: unknown): v is LoggingLevel {
  return typeof v === 'string' && (LOG_LEVELS as readonly string[]).includes(v);
}

function createSessionServer(state: TargetState, session: SessionContext): McpServer {
  const mcp = new McpServer(
    { name: state.name, version: '1.0.0' },
    {
      capabilities: { tools: {}, prompts: {}, resources: {}, logging: {}, completions: {} },
      instructions:
        'Demo MCP target for the gateway: deterministic tools exercising elicitation, sampling, roots, progress and cancellation.',
    },
  );
  const server = mcp.server;

  /** Options that make the SDK send a server-to-client request on the current tools/call POST stream. */
  const related = (extra: Extra) => ({
    relatedRequestId: extra.requestId,
    signal: extra.signal,
    timeout: CLIENT_REQUEST_TIMEOUT_MS,
  });

  /** Records the request id if the client cancels it (not if the session merely closes). */
  const watchCancel = (extra: Extra): void => {
    extra.signal.addEventListener(
      'abort',
      () => {
        if (!session.closed && !state.cancelledRequestIds.includes(extra.requestId))
          state.cancelledRequestIds.push(extra.requestId);
      },
      { once: true },
    );
  };

  const elicitForm = (params: ElicitRequestFormParams, extra: Extra): Promise<ElicitResult> =>
    server.elicitInput(params, related(extra));

  /** Shared by use_aws and confirm_action: a boolean confirmation form. */
  const confirmTool = async (message: string, onAccept: string, extra: Extra): Promise<CallToolResult> => {
    let result: ElicitResult;
    try {
      result = await elicitForm(
        {
          mode: 'form',
          message,
          requestedSchema: {
            type: 'object',
            properties: { confirm: { type: 'boolean', title: 'Confirm', description: 'Proceed?' } },
            required: ['confirm'],
          },
        },
        extra,
      );
    } catch (err) {
      // The try/catch fallback AWS asks targets to implement when the client cannot elicit.
      return errorText(`elicitation unavailable: ${errorMessage(err)}`);
    }
    if (result.action === 'accept' && result.content?.confirm === true) return text(onAccept);
    return text(`not executed (${result.action === 'accept' ? 'confirm false' : result.action})`);
  };

  mcp.registerTool('echo', { description: 'Echoes the text back.', inputSchema: { text: z.string() } }, ({ text: t }) =>
    text(`echo: ${t}`),
  );

  mcp.registerTool(
    'use_aws',
    {
      description: 'Asks the user (form elicitation) before running an AWS CLI command.',
      inputSchema: { command: z.string() },
    },
    ({ command }, extra) => confirmTool(`Run \`${command}\`?`, `executed: ${command}`, extra),
  );

  mcp.registerTool(
    'confirm_action',
    { description: 'Asks the user (form elicitation) to confirm an action.', inputSchema: { action: z.string() } },
    ({ action }, extra) => confirmTool(`Confirm action: ${action}?`, `confirmed: ${action}`, extra),
  );

  mcp.registerTool(
    'access_github_repo',
    {
      description: 'URL-mode elicitation (request based): asks the user to authorize repository access out of band.',
      inputSchema: { repo: z.string() },
    },
    async ({ repo }, extra) => {
      const elicitationId = randomUUID();
      const params: ElicitRequestURLParams = {
        mode: 'url',
        elicitationId,
        url: `https://github.example/login/oauth/authorize?repo=${encodeURIComponent(repo)}&elicitation=${elicitationId}`,
        message: `Authorize access to ${repo}`,
      };
      let result: ElicitResult;
      try {
        result = await server.elicitInput(params, related(extra));
      } catch (err) {
        return errorText(`elicitation unavailable: ${errorMessage(err)}`);
      }
      if (result.action !== 'accept') return text(`access to ${repo} not granted (${result.action})`);
      // notifications/elicitation/complete, related to this tools/call so it rides its POST stream.
      await server.createElicitationCompletionNotifier(elicitationId, { relatedRequestId: extra.requestId })();
      return text(`accessed ${repo}`);
    },
  );

  mcp.registerTool(
    'url_required',
    {
      description: 'URL-mode elicitation (exception based): the first call per resource fails with -32042.',
      inputSchema: { resource: z.string() },
    },
    ({ resource }) => {
      if (state.authorizedResources.has(resource)) return text(`authorized ${resource}`);
      // Remember first: the user is expected to complete the URL flow, then retry.
      state.authorizedResources.add(resource);
      // McpServer rethrows McpError code -32042 as a JSON-RPC error instead of wrapping it in an isError result.
      throw new UrlElicitationRequiredError([
        {
          mode: 'url',
          elicitationId: randomUUID(),
          url: `https://auth.example/consent?resource=${encodeURIComponent(resource)}`,
          message: `Authorization required for ${resource}`,
        },
      ]);
    },
  );

  mcp.registerTool(
    'sample',
    { description: 'Asks the client to sample an LLM (sampling/createMessage).', inputSchema: { prompt: z.string() } },
    async ({ prompt }, extra) => {
      const result = await server.createMessage(
        { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 },
        related(extra),
      );
      const blocks = Array.isArray(result.content) ? result.content : [result.content];
      const body = blocks.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('');
      return text(`sampled: ${result.model}: ${body}`);
    },
  );

  mcp.registerTool('list_roots', { description: 'Lists the client roots (roots/list).' }, async (extra) => {
    const result = await server.listRoots(undefined, related(extra));
    return text(`roots: ${result.roots.map((r) => r.uri).join(',')}`);
  });

  mcp.registerTool(
    'progress',
    {
      description: 'Sends one progress notification (if a progressToken was given) and one log message per step.',
      inputSchema: { steps: z.number().int().min(1).max(20), delayMs: z.number().int().min(0).max(10_000).optional() },
    },
    async ({ steps, delayMs }, extra) => {
      watchCancel(extra);
      const progressToken = extra._meta?.progressToken;
      const sendLog =
        session.logLevel === undefined || LOG_LEVELS.indexOf('info') >= LOG_LEVELS.indexOf(session.logLevel);
      for (let i = 1; i <= steps; i++) {
        if (!(await sleep(delayMs ?? 10, extra.signal))) return text(`cancelled at step ${i}`);
        // extra.sendNotification relates to this request: the notifications ride the tools/call POST stream.
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: i, total: steps },
          });
        }
        if (sendLog) {
          await extra.sendNotification({
            method: 'notifications/message',
            params: { level: 'info', logger: state.name, data: `step ${i}` },
          });
        }
      }
      return text(`done ${steps}`);
    },
  );

  mcp.registerTool(
    'slow',
    {
      description: 'Waits ms milliseconds (abortable by notifications/cancelled).',
      inputSchema: { ms: z.number().int().min(0).max(60_000) },
    },
    async ({ ms }, extra) => {
      watchCancel(extra);
      const completed = await sleep(ms, extra.signal);
      return text(completed ? `slept ${ms}` : `cancelled ${ms}`);
    },
  );

  mcp.registerTool(
    'multi_elicit',
    { description: 'Two sequential form elicitations (name, then age).' },
    async (extra) => {
      let name: string;
      try {
        const first = await elicitForm(
          {
            mode: 'form',
            message: 'What is your name?',
            requestedSchema: {
              type: 'object',
              properties: { name: { type: 'string', title: 'Name' } },
              required: ['name'],
            },
          },
          extra,
        );
        if (first.action !== 'accept') return text(`not completed (${first.action})`);
        name = String(first.content?.name);
        const second = await elicitForm(
          {
            mode: 'form',
            message: `How old are you, ${name}?`,
            requestedSchema: {
              type: 'object',
              properties: { age: { type: 'integer', title: 'Age', minimum: 0 } },
              required: ['age'],
            },
          },
          extra,
        );
        if (second.action !== 'accept') return text(`not completed (${second.action})`);
        return text(`hello ${name}, ${String(second.content?.age)}`);
      } catch (err) {
        return errorText(`elicitation unavailable: ${errorMessage(err)}`);
      }
    },
  );

  mcp.registerTool('fail', { description: 'Always fails (isError result).' }, () => errorText('failed on purpose'));

  // Ignores the client's declared capabilities on purpose (extra.sendRequest skips the SDK's checks):
  // it shows what a gateway does with a server request it did not declare to the target.
  mcp.registerTool(
    'request_anyway',
    {
      description: 'Sends a server-to-client request without checking capabilities (for gateway tests).',
      inputSchema: { kind: z.enum(['form', 'url', 'sampling', 'roots']) },
    },
    async ({ kind }, extra) => {
      try {
        if (kind === 'sampling') {
          const r = await extra.sendRequest(
            {
              method: 'sampling/createMessage',
              params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 },
            },
            CreateMessageResultSchema,
          );
          return text(`answered: ${r.model}`);
        }
        if (kind === 'roots') {
          const r = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
          return text(`answered: ${r.roots.length} roots`);
        }
        const params =
          kind === 'url'
            ? { mode: 'url' as const, elicitationId: randomUUID(), url: 'https://auth.example/x', message: 'Open this' }
            : {
                mode: 'form' as const,
                message: 'Fill this',
                requestedSchema: { type: 'object' as const, properties: {} },
              };
        const r = await extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema);
        return text(`answered: ${r.action}`);
      } catch (err) {
        return errorText(`refused: ${errorMessage(err)}`);
      }
    },
  );

  mcp.registerPrompt('greeting', { description: 'Greets someone.', argsSchema: { name: z.string() } }, ({ name }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }],
  }));

  mcp.registerResource(
    'readme',
    'demo://readme',
    { mimeType: 'text/plain', description: 'About this target.' },
    (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'demo target readme' }],
    }),
  );

  mcp.registerResource(
    'item',
    new ResourceTemplate('demo://items/{id}', {
      list: undefined,
      complete: { id: (value) => ['1', '2', '3'].filter((id) => id.startsWith(value)) },
    }),
    { mimeType: 'text/plain', description: 'An item by id.' },
    (uri, variables) => {
      const id = Array.isArray(variables.id) ? variables.id.join(',') : variables.id;
      return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${id}` }] };
    },
  );

  return mcp;
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
  const state: TargetState = {
    name: opts.name ?? 'demo-target',
    initializeCount: 0,
    requestsByMethod: {},
    cancelledRequestIds: [],
    authorizedResources: new Set(),
  };
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

  const newSession = async (): Promise<Session> => {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, session);
        state.initializeCount++;
      },
    });
    const ctx: SessionContext = { closed: false };
    const session: Session = { transport, mcp: createSessionServer(state, ctx), ctx };
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
      state.requestsByMethod[m.method] = (state.requestsByMethod[m.method] ?? 0) + 1;
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
    for (const id of ids) if (!state.cancelledRequestIds.includes(id)) state.cancelledRequestIds.push(id);
    setImmediate(() => {
      for (const id of ids) session.transport.closeSSEStream(id);
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== MCP_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    // DNS-rebinding protection: only loopback Host headers for our port.
    if (!allowedHosts.has((req.headers.host ?? '').toLowerCase())) {
      sendJsonRpcError(res, 403, -32000, `Invalid Host header: ${req.headers.host ?? ''}`);
      return;
    }
    if (closing) {
      sendJsonRpcError(res, 503, -32000, 'Server is shutting down');
      return;
    }
    const method = req.method ?? 'GET';
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      sendJsonRpcError(res, 405, -32000, 'Method not allowed.', { allow: 'GET, POST, DELETE' });
      return;
    }
    const sessionHeader = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;

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
    const session = await newSession();
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
  httpServer.on('connection', () => connections++);

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    httpServer.once('error', onError);
    httpServer.listen(opts.port ?? 0, host, () => {
      httpServer.off('error', onError);
      resolve();
    });
  });
  const port = (httpServer.address() as AddressInfo).port;
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  allowedHosts = new Set(
    [`${hostInUrl}:${port}`, `127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].map((h) => h.toLowerCase()),
  );

  return {
    url: `http://${hostInUrl}:${port}${MCP_PATH}`,
    close(): Promise<void> {
      closing ??= (async () => {
        await Promise.allSettled([...live].map((s) => closeSession(s)));
        await new Promise<void>((resolve) => {
          httpServer.close(() => resolve());
          httpServer.closeAllConnections();
        });
      })();
      return closing;
    },
    stats(): DemoTargetStats {
      return {
        initializeCount: state.initializeCount,
        connections,
        sessions: sessions.size,
        requestsByMethod: { ...state.requestsByMethod },
        cancelledRequestIds: [...state.cancelledRequestIds],
      };
    },
    dropSessions(): void {
      const all = [...live];
      sessions.clear();
      for (const s of all) void closeSession(s);
    },
  };
}
