import { randomBytes } from 'node:crypto';
import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createMcpHandler, createRequestStateCodec, type McpHttpHandler } from '@modelcontextprotocol/server';
import { ConsentBook, DEFAULT_CONSENT_TIMEOUT_MS } from './consent-book';
import { isConsentPath, serveConsentPage } from './consent-page';
import { closeServer, hostForUrl, listen, loopbackHostHeaders } from './loopback-http';
import { createModernDemoServer, type StatePayload } from './modern-tools';

/**
 * The 2026-07-28 ("modern") demo target's HTTP host: the official v2 SDK's `createMcpHandler` on
 * node:http, stats for tests, and the consent page of its URL elicitation. What the tools do is
 * `modern-tools.ts`. It is the built-in target `demo-modern` of `npm start` and the target of the
 * modern path's tests.
 *
 * - `legacy: 'reject'` (default): modern-only, as a target that never implemented 2025 would be.
 * - `legacy: 'stateless'`: dual-era; 2025 clients are served per request (and cannot be elicited).
 *
 * @example
 * const target = await startModernDemoTarget();
 * // configure the gateway with { name: 'modern', url: target.url }
 * await target.close();
 */

export interface ModernDemoTargetOptions {
  legacy?: 'reject' | 'stateless';
  /** serverInfo.name; default 'modern-demo-target'. */
  name?: string;
  /** HMAC key of the target's own requestState codec; default random. */
  stateKey?: string;
  /** Interface to bind; default 127.0.0.1 (loopback only). */
  host?: string;
  /** Port; default 0 = a free port. */
  port?: number;
  /** How long access_github_repo waits for its consent page after the client's `accept`; default 5 minutes. */
  consentTimeoutMs?: number;
}

export interface ModernDemoCall {
  tool: string;
  /** The requestState the target received (after the gateway unwrapped its own). */
  requestState?: string;
  inputResponseKeys: string[];
  /** The Mcp-Name header as received. */
  mcpName?: string;
  /** The capabilities the request declared in _meta. */
  clientCapabilities?: unknown;
  clientInfo?: unknown;
}

export interface ModernDemoStats {
  requestsByMethod: Record<string, number>;
  calls: ModernDemoCall[];
  /** requestStates the target minted, in order. */
  minted: string[];
}

export interface ModernDemoTarget {
  url: string;
  close(): Promise<void>;
  stats(): ModernDemoStats;
}

export async function startModernDemoTarget(options: ModernDemoTargetOptions = {}): Promise<ModernDemoTarget> {
  const host = options.host ?? '127.0.0.1';
  const name = options.name ?? 'modern-demo-target';
  const codec = createRequestStateCodec<StatePayload>({
    key: options.stateKey ?? randomBytes(32).toString('base64'),
    ttlSeconds: 600,
  });
  const stats: ModernDemoStats = { requestsByMethod: {}, calls: [], minted: [] };
  const mint = async (payload: StatePayload) => {
    const state = await codec.mint(payload);
    stats.minted.push(state);
    return state;
  };

  const httpServer: HttpServer = createServer((req, res) => {
    void serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  // Nothing below awaits before the handler exists, so no request is served without it.
  const port = await listen(httpServer, options.port ?? 0, host);
  const origin = `http://${hostForUrl(host)}:${port}`;
  const allowedHosts = loopbackHostHeaders(host, port);
  const consents = new ConsentBook(origin);
  const tools = {
    name,
    mint,
    consents,
    consentTimeoutMs: options.consentTimeoutMs ?? DEFAULT_CONSENT_TIMEOUT_MS,
  };

  const handler: McpHttpHandler = createMcpHandler(() => createModernDemoServer(tools, codec.verify), {
    legacy: options.legacy ?? 'reject',
    onerror: () => undefined,
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (isConsentPath((req.url ?? '/').split('?')[0] ?? '/')) {
      // DNS-rebinding protection for the page that grants access.
      if (!allowedHosts.has((req.headers.host ?? '').toLowerCase())) return void res.writeHead(403).end();
      return serveConsentPage(req, res, consents, allowedHosts, name);
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    record(req, body);
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const headers = new Headers();
    for (const [header, value] of Object.entries(req.headers))
      if (value !== undefined) headers.set(header, Array.isArray(value) ? value.join(', ') : value);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
      signal: abort.signal,
    });
    const response = await handler.fetch(request);
    const out: Record<string, string> = {};
    response.headers.forEach((value, header) => {
      out[header] = value;
    });
    res.writeHead(response.status, out);
    if (!response.body) return void res.end();
    const reader = response.body.getReader();
    abort.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), { once: true });
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  }

  function record(req: IncomingMessage, body: Buffer): void {
    let message: { method?: string; params?: Record<string, unknown> } | undefined;
    try {
      message = JSON.parse(body.toString('utf8'));
    } catch {
      return;
    }
    if (!message?.method) return;
    stats.requestsByMethod[message.method] = (stats.requestsByMethod[message.method] ?? 0) + 1;
    if (message.method !== 'tools/call') return;
    const params = message.params ?? {};
    const meta = (params._meta ?? {}) as Record<string, unknown>;
    stats.calls.push({
      tool: String(params.name),
      requestState: typeof params.requestState === 'string' ? params.requestState : undefined,
      inputResponseKeys: Object.keys((params.inputResponses as object | undefined) ?? {}),
      mcpName: req.headers['mcp-name'] as string | undefined,
      clientCapabilities: meta['io.modelcontextprotocol/clientCapabilities'],
      clientInfo: meta['io.modelcontextprotocol/clientInfo'],
    });
  }

  return {
    url: `${origin}/mcp`,
    stats: () => ({
      requestsByMethod: { ...stats.requestsByMethod },
      calls: stats.calls.map((c) => ({ ...c })),
      minted: [...stats.minted],
    }),
    close: async () => {
      consents.close();
      await handler.close().catch(() => undefined);
      await closeServer(httpServer);
    },
  };
}
