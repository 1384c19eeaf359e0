import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  CONNECTION_PREFIX,
  type ConnectionTable,
  type ConnectionVersion,
  connectionPk,
  connectionSk,
  type ReadConnection,
  type RefreshLease,
  registrationPk,
  registrationSk,
  type StoredConnection,
  USED_SK,
  usedPk,
} from '../connection-table';
import type { DynamoTable } from './table';

/** Registrations are kept a year after the last write; an authorization server that forgot one gets a new one. */
const REGISTRATION_TTL_SECONDS = 365 * 24 * 3600;

/** The per-user connections of the DynamoDB store (../connection-table.ts says what is kept). */
export class DynamoConnectionTable implements ConnectionTable {
  constructor(private readonly table: DynamoTable) {}

  /** One consistent GetItem. */
  private async item(pk: string, sk: string): Promise<Record<string, unknown> | undefined> {
    const { Item } = await this.table.guarded((abortSignal) =>
      this.table.client.send(new GetCommand({ TableName: this.table.name, Key: { pk, sk }, ConsistentRead: true }), {
        abortSignal,
      }),
    );
    return Item;
  }

  async read(principal: string, target: string): Promise<ReadConnection | undefined> {
    const Item = await this.item(connectionPk(principal), connectionSk(target));
    if (!Item) return undefined;
    const { ciphertext, wrappedKey, keyId, updatedAt, leaseHolder, leaseUntil } = Item as Record<string, unknown>;
    if (typeof ciphertext !== 'string' || typeof wrappedKey !== 'string' || typeof keyId !== 'string') {
      throw new Error(`malformed connection item for target ${target}`);
    }
    const lease =
      typeof leaseHolder === 'string' && typeof leaseUntil === 'number'
        ? { lease: { holder: leaseHolder, until: leaseUntil } }
        : {};
    return { ciphertext, wrappedKey, keyId, updatedAt: typeof updatedAt === 'number' ? updatedAt : 0, ...lease };
  }

  write(
    principal: string,
    target: string,
    stored: StoredConnection,
    expiresAt: number,
    leaseHolder?: string,
  ): Promise<boolean> {
    // A PutItem replaces the whole item: the lease attributes go with the write.
    return this.table.applied((abortSignal) =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.name,
          Item: { pk: connectionPk(principal), sk: connectionSk(target), ...stored, expiresAt },
          ...(leaseHolder === undefined
            ? {}
            : { ConditionExpression: 'leaseHolder = :holder', ExpressionAttributeValues: { ':holder': leaseHolder } }),
        }),
        { abortSignal },
      ),
    );
  }

  async remove(principal: string, target: string, version?: ConnectionVersion): Promise<boolean> {
    const key = { pk: connectionPk(principal), sk: connectionSk(target) };
    if (version) {
      const condition = versionCondition(version);
      return this.table.applied((abortSignal) =>
        this.table.client.send(
          new DeleteCommand({
            TableName: this.table.name,
            Key: key,
            ConditionExpression: condition.expression,
            ExpressionAttributeValues: condition.values,
          }),
          { abortSignal },
        ),
      );
    }
    const { Attributes } = await this.table.guarded((abortSignal) =>
      this.table.client.send(new DeleteCommand({ TableName: this.table.name, Key: key, ReturnValues: 'ALL_OLD' }), {
        abortSignal,
      }),
    );
    return Attributes !== undefined;
  }

  takeLease(
    principal: string,
    target: string,
    version: ConnectionVersion,
    lease: RefreshLease,
    now: number,
  ): Promise<boolean> {
    const condition = versionCondition(version);
    return this.table.applied((abortSignal) =>
      this.table.client.send(
        new UpdateCommand({
          TableName: this.table.name,
          Key: { pk: connectionPk(principal), sk: connectionSk(target) },
          UpdateExpression: 'SET leaseHolder = :holder, leaseUntil = :until',
          ConditionExpression: `${condition.expression} AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)`,
          ExpressionAttributeValues: {
            ...condition.values,
            ':holder': lease.holder,
            ':until': lease.until,
            ':now': now,
          },
        }),
        { abortSignal },
      ),
    );
  }

  async releaseLease(principal: string, target: string, holder: string): Promise<void> {
    await this.table.applied((abortSignal) =>
      this.table.client.send(
        new UpdateCommand({
          TableName: this.table.name,
          Key: { pk: connectionPk(principal), sk: connectionSk(target) },
          UpdateExpression: 'REMOVE leaseHolder, leaseUntil',
          ConditionExpression: 'leaseHolder = :holder',
          ExpressionAttributeValues: { ':holder': holder },
        }),
        { abortSignal },
      ),
    );
  }

  async targetsOf(principal: string): Promise<string[]> {
    const targets: string[] = [];
    for await (const page of this.table.pages({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': connectionPk(principal), ':prefix': CONNECTION_PREFIX },
      ProjectionExpression: 'sk',
    })) {
      for (const item of page.Items ?? []) targets.push(String(item.sk).slice(CONNECTION_PREFIX.length));
    }
    return targets;
  }

  useOnce(value: string, expiresAt: number): Promise<boolean> {
    return this.table.applied((abortSignal) =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.name,
          Item: { pk: usedPk(value), sk: USED_SK, expiresAt },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
        { abortSignal },
      ),
    );
  }

  async readRegistration(target: string, issuer: string): Promise<string | undefined> {
    const Item = await this.item(registrationPk(target), registrationSk(issuer));
    return typeof Item?.sealed === 'string' ? Item.sealed : undefined;
  }

  async keepRegistration(target: string, issuer: string, sealed: string): Promise<string> {
    const expiresAt = this.table.nowSeconds() + REGISTRATION_TTL_SECONDS;
    const kept = await this.table.applied((abortSignal) =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.name,
          Item: { pk: registrationPk(target), sk: registrationSk(issuer), sealed, expiresAt },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
        { abortSignal },
      ),
    );
    if (kept) return sealed;
    return (await this.readRegistration(target, issuer)) ?? sealed;
  }
}

/** The item is still the write that was read (an item without `updatedAt`, from before it was kept, reads as 0). */
function versionCondition(version: ConnectionVersion): { expression: string; values: Record<string, unknown> } {
  return {
    expression: `wrappedKey = :wrappedKey AND ${version.updatedAt === 0 ? 'attribute_not_exists(updatedAt)' : 'updatedAt = :updatedAt'}`,
    values: {
      ':wrappedKey': version.wrappedKey,
      ...(version.updatedAt === 0 ? {} : { ':updatedAt': version.updatedAt }),
    },
  };
}
