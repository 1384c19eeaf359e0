import { createServer } from 'node:net';
import { type ProtectedTarget, startProtectedTarget } from '../../examples/targets/protected-target';
import { ANONYMOUS } from '../../lambda/auth/inbound';
import type { GatewayLogLevel } from '../../lambda/observability/logger';
import { isAddressInUse } from '../demo-targets';
import { type LocalGateway, startLocalGateway } from '../local-gateway';
import { type AuthorizationServer, freeLoopbackPort, startAuthorizationServer } from './authorization-server';

/**
 * `npm run oauth:demo`: per-user OAuth to a target, all on loopback. A real authorization server
 * (./authorization-server.ts), an MCP server that accepts only its tokens (examples/targets/protected-target.ts),
 * and the gateway as `npm start` runs it (embedded DynamoDB), configured with that server as a
 * `userOAuth` target through a pre-registered client whose secret it reads from the environment.
 */

/** The target's name: its tool is `protected___whoami`. */
export const DEMO_TARGET = 'protected';
/** The environment variable the configuration names for the client secret (`{"fromEnv": …}`). */
export const CLIENT_SECRET_ENV = 'OAUTH_DEMO_CLIENT_SECRET';
/** The gateway's port unless told otherwise (that of `npm start`; a free one when it is taken). */
export const DEFAULT_PORT = 8080;

export interface OAuthDemoOptions {
  /** The gateway's loopback port; 0 picks a free one. Default DEFAULT_PORT, or a free one if it is in use. */
  port?: number;
  /** Default: GATEWAY_LOG_LEVEL, else INFO. */
  logLevel?: GatewayLogLevel;
}

export interface OAuthDemo {
  /** The gateway's MCP endpoint. */
  mcpUrl: string;
  /** The gateway's base URL (its consent pages and `/connections`). */
  gatewayUrl: string;
  /** Set when the default port was in use and a free one was taken. */
  movedFrom?: number;
  target: { name: string; url: string; tool: string };
  authorizationServer: { issuer: string; clientId: string; pid: number };
  /** Who calls without inbound authentication: every local caller. */
  principal: string;
  dynamodbEndpoint: string;
  tableName: string;
  /** Stops the gateway, the target and the authorization server's process. */
  close(): Promise<void>;
}

export async function startOAuthDemo(options: OAuthDemoOptions = {}): Promise<OAuthDemo> {
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
    closers.length = 0;
  };
  try {
    const { port, movedFrom } = await choosePort(options.port);
    // The authorization server must know the callback before it starts, so the gateway's address is fixed first.
    const gatewayUrl = `http://127.0.0.1:${port}`;
    const as: AuthorizationServer = await startAuthorizationServer({
      redirectUris: [`${gatewayUrl}/connect/callback/${DEMO_TARGET}`],
    });
    closers.push(as.close);
    const target: ProtectedTarget = await startProtectedTarget(as.issuer);
    closers.push(target.close);
    const gateway: LocalGateway = await startLocalGateway({
      port,
      demo: false,
      config: {
        targets: [
          {
            name: DEMO_TARGET,
            url: target.url,
            userOAuth: {
              clientId: as.clientId,
              clientSecret: { fromEnv: CLIENT_SECRET_ENV },
              // A client secret goes only to the issuer it was issued by.
              authorizationServer: as.issuer,
            },
          },
        ],
        // The callback registered above, whatever host name a client reaches the gateway by.
        connections: { publicUrl: gatewayUrl },
        ...(options.logLevel && { logLevel: options.logLevel }),
      },
      // The secret reaches the gateway as a deployment's would: an environment variable the configuration names.
      auth: { outbound: { env: { ...process.env, [CLIENT_SECRET_ENV]: as.clientSecret } } },
    });
    closers.push(gateway.close);
    return {
      mcpUrl: gateway.url,
      gatewayUrl,
      movedFrom,
      target: { name: DEMO_TARGET, url: target.url, tool: `${DEMO_TARGET}___whoami` },
      authorizationServer: { issuer: as.issuer, clientId: as.clientId, pid: as.pid },
      principal: ANONYMOUS,
      dynamodbEndpoint: gateway.dynamodbEndpoint,
      tableName: gateway.config.tableName,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The port asked for; for the default one, a free port when it is taken (said in `movedFrom`). */
async function choosePort(asked: number | undefined): Promise<{ port: number; movedFrom?: number }> {
  if (asked === 0) return { port: await freeLoopbackPort() };
  const port = asked ?? DEFAULT_PORT;
  try {
    await probe(port);
    return { port };
  } catch (error) {
    if (asked !== undefined || !isAddressInUse(error)) throw error;
    return { port: await freeLoopbackPort(), movedFrom: port };
  }
}

/** Fails (EADDRINUSE) when the port is taken on loopback. */
async function probe(port: number): Promise<void> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  await new Promise((resolve) => server.close(resolve));
}

/** What a person needs once it runs: where to point a client, what happens, how to look and undo. */
export function demoLines(demo: OAuthDemo): string[] {
  const { target } = demo;
  const operator = `npm run connections -- list --principal ${demo.principal} --endpoint ${demo.dynamodbEndpoint} --table ${demo.tableName}`;
  return [
    `per-user OAuth demo ready: ${demo.mcpUrl}`,
    ...(demo.movedFrom === undefined
      ? []
      : [`  port ${demo.movedFrom} is in use, so the gateway listens on ${new URL(demo.gatewayUrl).port}`]),
    `  target ${target.name} → ${target.url}: an MCP server that accepts only tokens of its authorization server`,
    `  authorization server: ${demo.authorizationServer.issuer} (a test server; the gateway is its pre-registered client "${demo.authorizationServer.clientId}", secret from ${CLIENT_SECRET_ENV})`,
    '',
    `  1. From an MCP client that supports URL elicitation (capabilities {"elicitation": {"url": {}}}), call ${target.tool};`,
    '     e.g. in another terminal:',
    `       npm run demo:client -- --url ${demo.mcpUrl} --tool ${target.tool} --arguments '{}'`,
    '     The gateway has your client show a link (URL elicitation; a request without a stream gets error -32042 with',
    '     the link instead). Open it in a browser (demo:client asks first: answer y).',
    '  2. On the gateway\'s page, "Continue to sign in"; at the authorization server, sign in with any user name and any',
    '     password, then authorize.',
    `  3. The call goes on and answers with the user name you signed in as (after -32042, call again). Later calls ask nothing.`,
    '',
    `  your connections (you are "${demo.principal}": no inbound auth here): curl ${demo.gatewayUrl}/connections`,
    `  disconnect: curl -X DELETE ${demo.gatewayUrl}/connections/${target.name}`,
    `  as an operator: ${operator}`,
    '  Ctrl-C stops it all (the gateway, the target, the authorization server)',
  ];
}
