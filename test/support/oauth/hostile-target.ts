import { createServer } from 'node:http';
import { listen } from '../loopback';

/**
 * A hostile MCP target as far as its authorization goes: every MCP request is answered 401, its
 * `WWW-Authenticate` names the protected-resource metadata it chooses (`resourceMetadata`, default its
 * own), and its own metadata names the authorization servers it chooses. What a gateway does with
 * those URLs is the test.
 */
export interface HostileTarget {
  url: string;
  /** The `resource_metadata` URLs its 401s named, in order. */
  named: string[];
  close(): Promise<void>;
}

export async function startHostileTarget(choices: {
  /** The `resource_metadata` its 401 names (read at each request: it may depend on what runs by then). */
  resourceMetadata?: () => string;
  /** The `authorization_servers` of its own protected-resource metadata. */
  authorizationServers?: () => string[];
}): Promise<HostileTarget> {
  let url = '';
  const named: string[] = [];
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/.well-known/oauth-protected-resource/mcp' || path === '/.well-known/oauth-protected-resource') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resource: url, authorization_servers: choices.authorizationServers?.() ?? [] }));
      return;
    }
    if (path === '/mcp') {
      const metadata =
        choices.resourceMetadata?.() ?? `${new URL(url).origin}/.well-known/oauth-protected-resource/mcp`;
      named.push(metadata);
      req.resume();
      res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${metadata}"` }).end();
      return;
    }
    res.writeHead(404).end();
  });
  const { base, close } = await listen(server);
  url = `${base}/mcp`;
  return { url, named, close };
}

/** A loopback server that only records what reached it (what the policy must keep the gateway from). */
export interface Recorder {
  base: string;
  /** `METHOD path` of every request it got. */
  requests: string[];
  close(): Promise<void>;
}

export async function startRecorder(): Promise<Recorder> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const { base, close } = await listen(server);
  return { base, requests, close };
}
