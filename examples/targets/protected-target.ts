import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { z } from 'zod';
import { closeServer, listen } from './loopback-http';

/**
 * An MCP server that serves each user their own data, protected as the MCP authorization
 * specification (2025-11-25) makes a server an OAuth 2.1 resource server:
 * - every request needs `Authorization: Bearer <token>`, a JWT of its authorization server whose
 *   audience is this server's resource URL (RFC 8707), checked against the server's published keys;
 * - without one (or with one that fails) it answers 401 with
 *   `WWW-Authenticate: Bearer resource_metadata="…"`, pointing at its protected-resource metadata
 *   (RFC 9728), served at `/.well-known/oauth-protected-resource/mcp`.
 * Built with the official v1 SDK (sessionful Streamable HTTP); its tool `whoami` answers with the
 * token's subject, so a test (or a person trying `npm run oauth:demo`) sees whose token a call carried.
 */
export interface ProtectedTarget {
  url: string;
  /** The resource metadata's URL. */
  resourceMetadataUrl: string;
  stats(): ProtectedTargetStats;
  close(): Promise<void>;
}

export interface ProtectedTargetStats {
  /** The subjects of the tokens of requests accepted, in order. */
  subjects: string[];
  /** Those tokens' ids (`jti`), in the same order: which token each request carried, never the token. */
  tokenIds: string[];
  /** Requests refused 401 (no token, a bad or expired one). */
  refused: number;
}

export interface ProtectedTargetOptions {
  /** Its loopback port; default 0, a free one. */
  port?: number;
}

export async function startProtectedTarget(
  issuer: string,
  options: ProtectedTargetOptions = {},
): Promise<ProtectedTarget> {
  const stats: ProtectedTargetStats = { subjects: [], tokenIds: [], refused: 0 };
  const keys = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let base = '';
  const resource = () => `${base}/mcp`;
  const metadataUrl = () => `${base}/.well-known/oauth-protected-resource/mcp`;

  const refuse = (res: ServerResponse, error?: string) => {
    stats.refused++;
    const params = [`resource_metadata="${metadataUrl()}"`, ...(error ? [`error="${error}"`] : [])];
    res.writeHead(401, { 'www-authenticate': `Bearer ${params.join(', ')}`, 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: error ?? 'unauthorized' }));
  };

  const verified = async (req: IncomingMessage): Promise<{ sub: string; jti: string } | undefined> => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token) return undefined;
    try {
      const { payload } = await jwtVerify(token, keys, { issuer, audience: resource() });
      return typeof payload.sub === 'string' ? { sub: payload.sub, jti: String(payload.jti ?? '') } : undefined;
    } catch {
      return undefined;
    }
  };

  const build = (): McpServer => {
    const server = new McpServer({ name: 'per-user-target', version: '1.0.0' });
    server.registerTool('whoami', { description: 'Whose token this call carried.' }, async (extra) => ({
      content: [{ type: 'text', text: String(extra.authInfo?.extra?.sub ?? 'nobody') }],
    }));
    // The reference page's URL-mode samples call this tool (a repository the user's account can read).
    server.registerTool(
      'access_github_repo',
      { description: 'Reads a repository as the user.', inputSchema: { repo: z.string() } },
      async ({ repo }, extra) => ({
        content: [{ type: 'text', text: `${String(extra.authInfo?.extra?.sub ?? 'nobody')} read ${repo}` }],
      }),
    );
    return server;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.url === '/.well-known/oauth-protected-resource/mcp') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ resource: resource(), authorization_servers: [issuer], scopes_supported: ['mcp:tools'] }),
      );
      return;
    }
    const token = await verified(req);
    if (!token) return refuse(res, req.headers.authorization ? 'invalid_token' : undefined);
    const { sub } = token;
    stats.subjects.push(sub);
    stats.tokenIds.push(token.jti);
    const authInfo = { token: '', clientId: '', scopes: ['mcp:tools'], extra: { sub } };
    (req as IncomingMessage & { auth?: typeof authInfo }).auth = authInfo;
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    const body = req.method === 'POST' ? await readJsonBody(req) : undefined;
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport && !sessionId && req.method === 'POST' && isInitializeRequest(body)) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void transports.set(id, created),
      });
      await build().connect(created);
      transport = created;
    }
    if (!transport) {
      res.writeHead(sessionId ? 404 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'No session' } }));
      return;
    }
    await transport.handleRequest(req, res, body);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(error));
      else res.destroy();
    });
  });
  base = `http://127.0.0.1:${await listen(http, options.port ?? 0, '127.0.0.1')}`;
  return {
    url: resource(),
    resourceMetadataUrl: metadataUrl(),
    stats: () => structuredClone(stats),
    close: async () => {
      await Promise.allSettled([...transports.values()].map((t) => t.close()));
      await closeServer(http);
    },
  };
}

/** A request's whole body as JSON (undefined when empty). */
async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}
