import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  CONNECTION_PREFIX,
  type ConnectionTable,
  connectionPk,
  connectionSk,
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

  async read(principal: string, target: string): Promise<StoredConnection | undefined> {
    const Item = await this.item(connectionPk(principal), connectionSk(target));
    if (!Item) return undefined;
    const { ciphertext, wrappedKey, keyId, updatedAt } = Item as Record<string, unknown>;
    if (typeof ciphertext !== 'string' || typeof wrappedKey !== 'string' || typeof keyId !== 'string') {
      throw new Error(`malformed connection item for target ${target}`);
    }
    return { ciphertext, wrappedKey, keyId, updatedAt: typeof updatedAt === 'number' ? updatedAt : 0 };
  }

  async write(principal: string, target: string, stored: StoredConnection, expiresAt: number): Promise<void> {
    await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new PutCommand({
          TableName: this.table.name,
          Item: { pk: connectionPk(principal), sk: connectionSk(target), ...stored, expiresAt },
        }),
        { abortSignal },
      ),
    );
  }

  async remove(principal: string, target: string): Promise<boolean> {
    const { Attributes } = await this.table.guarded((abortSignal) =>
      this.table.client.send(
        new DeleteCommand({
          TableName: this.table.name,
          Key: { pk: connectionPk(principal), sk: connectionSk(target) },
          ReturnValues: 'ALL_OLD',
        }),
        { abortSignal },
      ),
    );
    return Attributes !== undefined;
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
    const expiresAt = Math.floor(Date.now() / 1000) + REGISTRATION_TTL_SECONDS;
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
