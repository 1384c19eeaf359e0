import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type AuthInfo,
  createMcpHandler,
  getOAuthProtectedResourceMetadataUrl,
  McpServer,
  requireBearerAuth,
} from '@modelcontextprotocol/server';
import { createRemoteJWKSet, jwtVerify } from 'jose';

/**
 * A 2026-07-28 MCP server that acts as its user, protected the way the official v2 SDK has a server
 * do it: `requireBearerAuth` in front of `createMcpHandler` (401 with `WWW-Authenticate: Bearer
 * resource_metadata=…`, the token's resource compared with this server's), and its protected-resource
 * metadata at `getOAuthProtectedResourceMetadataUrl`. The token verifier checks a JWT of the given
 * authorization server for this resource. Its tool `whoami` answers with the token's subject.
 */
export interface ProtectedModernTarget {
  url: string;
  stats(): { subjects: string[]; refused: number };
  close(): Promise<void>;
}

export async function startProtectedModernTarget(issuer: string): Promise<ProtectedModernTarget> {
  const stats = { subjects: [] as string[], refused: 0 };
  const keys = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  const http = createServer((req, res) => {
    serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const resource = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
  const metadataUrl = getOAuthProtectedResourceMetadataUrl(resource);

  const gate = requireBearerAuth({
    expectedResource: resource,
    resourceMetadataUrl: metadataUrl,
    verifier: {
      verifyAccessToken: async (token): Promise<AuthInfo> => {
        const { payload } = await jwtVerify(token, keys, { issuer, audience: resource.href });
        return {
          token,
          clientId: String(payload.client_id ?? ''),
          scopes: String(payload.scope ?? '')
            .split(' ')
            .filter(Boolean),
          expiresAt: payload.exp,
          resource,
          extra: { sub: payload.sub },
        };
      },
    },
  });
  const handler = createMcpHandler(
    () => {
      const server = new McpServer({ name: 'per-user-modern-target', version: '1.0.0' });
      server.registerTool('whoami', { description: 'Whose token this call carried.' }, async (ctx) => ({
        content: [{ type: 'text', text: String(ctx.http?.authInfo?.extra?.sub ?? 'nobody') }],
      }));
      return server;
    },
    { legacy: 'reject', onerror: () => undefined },
  );

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    const request = new Request(new URL(req.url ?? '/', resource), {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks),
    });
    let response: Response;
    if (new URL(request.url).href === metadataUrl) {
      response = Response.json({
        resource: resource.href,
        authorization_servers: [issuer],
        scopes_supported: ['mcp:tools'],
      });
    } else {
      const auth = await gate(request);
      if (auth instanceof Response) {
        stats.refused++;
        response = auth;
      } else {
        stats.subjects.push(String(auth.extra?.sub));
        response = await handler.fetch(request, { authInfo: auth });
      }
    }
    const out: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      out[name] = value;
    });
    res.writeHead(response.status, out);
    res.end(Buffer.from(await response.arrayBuffer()));
  }

  return {
    url: resource.href,
    stats: () => structuredClone(stats),
    close: async () => {
      await handler.close();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
