import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { InboundAuth } from '../auth/types';
import type { AuthConfig, GatewayConfig } from '../config/schema';
import { TargetAuthorizationServer } from '../connections/authorization-server';
import { ConsentLinks } from '../connections/consent-links';
import { type ConsentRoutes, createConsentRoutes } from '../connections/consent-routes';
import { Envelope, KmsKeySource, LocalKeySource } from '../connections/envelope';
import { IdentityLogin } from '../connections/identity-login';
import { clientMetadataUrlOf, UserConnections } from '../connections/user-connections';
import { ConnectionVault } from '../connections/vault';
import { type KeySecrets, SealedBox } from '../crypto/sealed-box';
import type { GatewayLogger } from '../observability/logger';
import type { OutboundPolicy } from '../outbound/policy';
import type { Clock } from '../scheduling/clock';
import type { ConnectionTable } from '../state/connection-table';
import { DynamoConnectionTable } from '../state/dynamo/connections';
import { DynamoTable } from '../state/dynamo/table';
import { createDocumentClient } from '../state/dynamo-client';
import type { OutboundCredentials, TargetCredentials } from '../targets/credentials';

/**
 * Per-user connections, wired when a target has `userOAuth`: the vault (the table, envelope encryption
 * under the KMS key or the local key), each such target's authorization server, the consent links
 * (sealed under a key derived from the requestState keys, for its own purpose), and the pages.
 */
export interface BuiltConnections {
  connections: UserConnections;
  routes: ConsentRoutes;
  /** The per-user targets' credentials (their static headers, if any, plus the user's token). */
  credentials: Map<string, TargetCredentials>;
}

export interface ConnectionsBuildOptions {
  documentClient?: DynamoDBDocumentClient;
  table?: ConnectionTable;
  secrets: KeySecrets;
  outbound: OutboundCredentials;
  auth: InboundAuth;
  logger: GatewayLogger;
  /** The gateway's clock (./bootstrap.ts chooses it). */
  clock: Clock;
  /** The outbound policy (./outbound.ts) every URL a target or an authorization server names goes through. */
  outboundPolicy: OutboundPolicy;
  /** Its fetch. */
  outboundFetch: typeof fetch;
}

export function buildConnections(
  config: GatewayConfig,
  options: ConnectionsBuildOptions,
): BuiltConnections | undefined {
  const targets = config.targets.filter((target) => target.userOAuth);
  if (targets.length === 0) return undefined;
  const settings = config.connections;
  const table =
    options.table ??
    new DynamoConnectionTable(
      new DynamoTable(options.documentClient ?? createDocumentClient(), config.tableName, {
        operationTimeoutMs: config.storeOperationTimeoutMs,
        clock: options.clock,
      }),
    );
  const keys = settings.kmsKeyArn
    ? new KmsKeySource(settings.kmsKeyArn)
    : new LocalKeySource(settings.localKey ?? `connections-vault:${options.secrets.current}`);
  if (!settings.kmsKeyArn && !settings.localKey) {
    options.logger.info('connections are encrypted under a key derived from the requestState key (no kmsKeyArn)');
  }
  const box = SealedBox.fromSecrets({
    current: `consent-links:${options.secrets.current}`,
    ...(options.secrets.previous ? { previous: `consent-links:${options.secrets.previous}` } : {}),
  });
  const resolve = (value: Parameters<OutboundCredentials['valueOf']>[0], field: string) =>
    options.outbound.valueOf(value, field);
  const policy = options.outboundPolicy;
  const fetch = options.outboundFetch;
  const servers = new Map(
    targets.map((target) => [
      target.name,
      new TargetAuthorizationServer(target, target.userOAuth!, {
        table,
        box,
        resolve,
        logger: options.logger,
        clock: options.clock,
        fetch,
        allowsBrowserRedirect: (url) => policy.allowsBrowserRedirect(url),
        allowedIssuers: config.outbound.authorizationServers,
        clientMetadataUrl: clientMetadataUrlOf(settings.publicUrl, target.name),
      }),
    ]),
  );
  const connections = new UserConnections({
    vault: new ConnectionVault(table, new Envelope(keys), { idleDays: settings.idleDays, clock: options.clock }),
    servers,
    links: new ConsentLinks(box, settings.linkTtlSeconds * 1000, options.clock),
    publicUrl: settings.publicUrl,
    logger: options.logger,
    clock: options.clock,
  });
  const identity = identityLogin(config.auth, settings.identityLogin, resolve, fetch, options.clock);
  const routes = createConsentRoutes({ connections, table, auth: options.auth, identity, logger: options.logger });
  const credentials = new Map<string, TargetCredentials>();
  targets.forEach((target) => {
    const user = connections.credentialsFor(target.name);
    const fixed = target.headers ? options.outbound.forTarget({ ...target, userOAuth: undefined }) : undefined;
    credentials.set(
      target.name,
      fixed
        ? {
            perUser: true,
            headers: async () => ({ ...(await fixed.headers()), ...(await user.headers()) }),
            rejected: user.rejected,
          }
        : user,
    );
  });
  return { connections, routes, credentials };
}

function identityLogin(
  auth: AuthConfig,
  login: GatewayConfig['connections']['identityLogin'],
  resolve: (value: NonNullable<typeof login>['clientId'], field: string) => Promise<string>,
  fetch: typeof globalThis.fetch,
  clock: Clock,
): IdentityLogin | undefined {
  if (auth.type !== 'jwt' || !login) return undefined;
  return new IdentityLogin(
    auth.discoveryUrl,
    fetch,
    async () => {
      const client_id = await resolve(login.clientId, 'connections.identityLogin.clientId');
      const client_secret = login.clientSecret
        ? await resolve(login.clientSecret, 'connections.identityLogin.clientSecret')
        : undefined;
      return client_secret ? { client_id, client_secret } : { client_id };
    },
    clock,
  );
}
