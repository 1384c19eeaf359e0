import { parseArgs } from 'node:util';
import { parseConfig } from '../lambda/config/schema';
import { systemClock } from '../lambda/scheduling/clock';
import { CONNECTION_PREFIX, connectionPk } from '../lambda/state/connection-table';
import { DynamoConnectionTable } from '../lambda/state/dynamo/connections';
import { DynamoTable } from '../lambda/state/dynamo/table';
import { createDocumentClient } from '../lambda/state/dynamo-client';

/**
 * `npm run connections -- list|remove --principal P [--target T]`: an operator's view of the per-user
 * connections (targets[].userOAuth) of one principal, in the deployed table or a local one. Items are
 * found by the gateway's own key functions (lambda/state/connection-table.ts: the principal is only
 * stored hashed, so a principal must be named; there is no listing of everyone). Only names and times
 * are read: the ciphertext and the wrapped key are never fetched, let alone printed. Removing deletes
 * the item, which every gateway instance reads on each use; it cannot revoke the tokens at the
 * authorization server (that needs the vault's key: the user's own `DELETE /connections/<target>` does it).
 */

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export const USAGE = `Usage:
  npm run connections -- list   --principal P [--table NAME] [--endpoint URL] [--region R] [--json]
  npm run connections -- remove --principal P [--target T] [--table NAME] [--endpoint URL] [--region R] [--json]

The per-user OAuth connections (targets[].userOAuth) of one principal, as the gateway keys them.
  list      the principal's connected targets, when each was written and when it expires unused
  remove    deletes the principal's connection at --target, or all of them without --target

  --principal P   the caller as the gateway names it: "<iss>#<sub>" (auth jwt), the caller's IAM ARN
                  (a SigV4 function URL: auth iam, or none as deployed by default), "anonymous" (no auth)
  --target T      one target (remove only)
  --table NAME    the gateway's table (the stack output TableName) [default: ${defaultTableName()}]
  --endpoint URL  a local DynamoDB API (npm start's embedded one, DynamoDB Local) instead of AWS
  --region R      AWS region [default: the AWS SDK's: AWS_REGION, the profile's region]
  --json          one JSON document on stdout

AWS credentials are the AWS SDK's defaults (AWS_PROFILE, environment, SSO, instance role); they need
dynamodb:Query (list) and dynamodb:Query and dynamodb:DeleteItem (remove) on the table.
Exit status: 0 done (also when there was nothing to remove), 1 the table could not be used, 2 a bad command line.`;

/** A connection as this script shows it: never the ciphertext or the wrapped key. */
export interface ConnectionSummary {
  target: string;
  /** ISO time of the last write (the consent, or the last refresh). */
  updatedAt?: string;
  /** ISO time the table's TTL removes it if it stays unused. */
  expiresAt?: string;
  /** Which key wrapped its data key (`kms:<arn>` or `local:<kid>`): an identifier, not a secret. */
  keyId?: string;
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface ConnectionsCommand {
  action: 'list' | 'remove';
  principal: string;
  target?: string;
  table: string;
  endpoint?: string;
  region?: string;
  json: boolean;
}

function defaultTableName(): string {
  // The gateway's own default, from the one schema that holds every default.
  return parseConfig({}).tableName;
}

export function parseCommand(argv: string[]): ConnectionsCommand | 'help' {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const [action, ...rest] = positionals;
  if (action !== 'list' && action !== 'remove') throw new UsageError('give a command: list or remove');
  if (rest.length) throw new UsageError(`unexpected argument ${rest[0]}`);
  if (!values.principal?.trim()) throw new UsageError('--principal is required');
  if (values.target !== undefined && action !== 'remove') throw new UsageError('--target is for remove');
  if (values.target !== undefined && !values.target.trim()) throw new UsageError('--target needs a value');
  if (values.endpoint !== undefined) {
    const protocol = URL.canParse(values.endpoint) ? new URL(values.endpoint).protocol : '';
    if (protocol !== 'http:' && protocol !== 'https:')
      throw new UsageError(`--endpoint: not a URL: ${values.endpoint}`);
  }
  return {
    action,
    principal: values.principal,
    target: values.target,
    table: values.table ?? defaultTableName(),
    endpoint: values.endpoint,
    region: values.region,
    json: values.json ?? false,
  };
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      principal: { type: 'string' },
      target: { type: 'string' },
      table: { type: 'string' },
      endpoint: { type: 'string' },
      region: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: true,
  });
}

const isoOf = (value: unknown, scale: number): string | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? new Date(value * scale).toISOString() : undefined;

/** The principal's connections: names, times and key ids only (the projection leaves the rest in the table). */
export async function listConnections(table: DynamoTable, principal: string): Promise<ConnectionSummary[]> {
  const found: ConnectionSummary[] = [];
  for await (const page of table.pages({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': connectionPk(principal), ':prefix': CONNECTION_PREFIX },
    ProjectionExpression: 'sk, updatedAt, expiresAt, keyId',
  })) {
    for (const item of page.Items ?? []) {
      found.push({
        target: String(item.sk).slice(CONNECTION_PREFIX.length),
        updatedAt: isoOf(item.updatedAt, 1),
        expiresAt: isoOf(item.expiresAt, 1000),
        keyId: typeof item.keyId === 'string' ? item.keyId : undefined,
      });
    }
  }
  return found;
}

/** Removes the principal's connection at `target`, or every one; returns the targets removed. */
export async function removeConnections(table: DynamoTable, principal: string, target?: string): Promise<string[]> {
  const connections = new DynamoConnectionTable(table);
  const targets = target === undefined ? await connections.targetsOf(principal) : [target];
  const removed: string[] = [];
  for (const name of targets) if (await connections.remove(principal, name)) removed.push(name);
  return removed;
}

/** Runs one command; what it prints goes to `out`. Returns the exit status. */
export async function runConnections(
  argv: string[],
  out: (line: string) => void = console.log,
  err: (line: string) => void = console.error,
): Promise<number> {
  let command: ConnectionsCommand | 'help';
  try {
    command = parseCommand(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    err(`${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (command === 'help') {
    out(USAGE);
    return 0;
  }
  const client = createDocumentClient({ endpoint: command.endpoint, region: command.region });
  const table = new DynamoTable(client, command.table, { clock: systemClock });
  const where = `table ${command.table}${command.endpoint ? ` at ${command.endpoint}` : ''}`;
  try {
    if (command.action === 'list') {
      const connections = await listConnections(table, command.principal);
      if (command.json) out(JSON.stringify({ principal: command.principal, connections }));
      else {
        const count = connections.length === 1 ? '1 connection' : `${connections.length} connections`;
        out(`${command.principal}: ${count} (${where})`);
        for (const c of connections) {
          out(
            `  ${c.target}  written ${c.updatedAt ?? '?'}  expires unused ${c.expiresAt ?? '?'}  key ${c.keyId ?? '?'}`,
          );
        }
      }
      return 0;
    }
    const removed = await removeConnections(table, command.principal, command.target);
    if (command.json) out(JSON.stringify({ principal: command.principal, removed }));
    else if (removed.length === 0)
      out(`${command.principal}: no connection${command.target ? ` at ${command.target}` : 's'} to remove (${where})`);
    else {
      out(`${command.principal}: removed ${removed.join(', ')} (${where})`);
      out(
        '  the gateway reads the table on every use: these are gone at once; the tokens were not revoked at the authorization server',
      );
    }
    return 0;
  } catch (error) {
    const { name, message } = error as { name?: string; message?: string };
    const cause = (error as { cause?: { name?: string; message?: string } }).cause;
    const failure = cause ?? { name, message };
    const hint =
      failure.name === 'ResourceNotFoundException'
        ? ' (no such table here: --table takes the stack output TableName)'
        : '';
    err(`${where}: ${failure.name}: ${failure.message}${hint}`);
    return 1;
  } finally {
    // Its keep-alive sockets would hold a caller's process open (the tests run this in theirs).
    client.destroy();
  }
}

if (require.main === module) {
  runConnections(process.argv.slice(2)).then(
    (status) => process.exit(status),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
