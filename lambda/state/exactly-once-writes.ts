import { randomBytes } from 'node:crypto';
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { BuildHandlerArguments, BuildHandlerOutput, BuildMiddleware, MetadataBearer } from '@smithy/types';

/**
 * Every single-item write (PutItem, UpdateItem) applies at most once, whatever the SDK retries.
 *
 * The SDK sends a request again when its answer is lost (an attempt's timeout, a reset connection),
 * though DynamoDB may already have applied it. A conditional write then meets its own effect and is
 * refused (a session "taken", a claim "held by another", a version "moved on"), and an ADD counts twice.
 * So each write carries a token of its own, stored on the item (WRITE_TOKEN) and made part of its
 * condition (not already written by this very write). A refusal after more than one attempt reads the
 * item: carrying the write's token, it was this write that applied, and the write succeeded.
 */

/** The attribute each write leaves on its item: the token of the last write applied to it. */
export const WRITE_TOKEN = 'writeToken';
const NAME = '#gatewayWriteToken';
const VALUE = ':gatewayWriteToken';
const NOT_THIS_WRITE = `(attribute_not_exists(${NAME}) OR ${NAME} <> ${VALUE})`;

interface WriteInput {
  TableName: string;
  Key?: Record<string, AttributeValue>;
  Item?: Record<string, AttributeValue>;
  ConditionExpression?: string;
  UpdateExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
  ReturnValues?: string;
}

interface HttpRequestLike {
  headers: Record<string, string>;
  body?: unknown;
}

/** The write with its token: stored on the item, and in its condition. */
export function withWriteToken(kind: 'PutItem' | 'UpdateItem', input: WriteInput, token: string): WriteInput {
  const names = { ...input.ExpressionAttributeNames, [NAME]: WRITE_TOKEN };
  const values = { ...input.ExpressionAttributeValues, [VALUE]: { S: token } };
  const condition = input.ConditionExpression ? `(${input.ConditionExpression}) AND ${NOT_THIS_WRITE}` : NOT_THIS_WRITE;
  if (kind === 'PutItem') {
    return {
      ...input,
      Item: { ...input.Item, [WRITE_TOKEN]: { S: token } },
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    };
  }
  const update = input.UpdateExpression ?? '';
  // One SET clause per expression: the token joins it, or starts one.
  const set = /\bSET\s+/i;
  const updated = set.test(update)
    ? update.replace(set, `SET ${NAME} = ${VALUE}, `)
    : `${update} SET ${NAME} = ${VALUE}`;
  return {
    ...input,
    UpdateExpression: updated.trim(),
    ConditionExpression: condition,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/** The key of the item a write goes to: its Key, or the key attributes of its Item. */
function keyOf(input: WriteInput, keyNames: readonly string[]): Record<string, AttributeValue> | undefined {
  if (input.Key) return input.Key;
  if (!input.Item) return undefined;
  const key: Record<string, AttributeValue> = {};
  for (const name of keyNames) {
    const value = input.Item[name];
    if (!value) return undefined;
    key[name] = value;
  }
  return key;
}

/** The serialized JSON body (the SDK's serializer leaves bytes or a string). */
function bodyText(body: unknown): string | undefined {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return new TextDecoder().decode(body);
  return undefined;
}

function writeKind(request: HttpRequestLike): 'PutItem' | 'UpdateItem' | undefined {
  const target = request.headers['x-amz-target'] ?? request.headers['X-Amz-Target'] ?? '';
  if (target.endsWith('.PutItem')) return 'PutItem';
  if (target.endsWith('.UpdateItem')) return 'UpdateItem';
  return undefined;
}

/**
 * The middleware (build step, before the content length is set and outside the retries): adds the
 * token to the serialized request, and turns a refusal of a retried write that had applied into its
 * success. `keyNames`: the table's key attributes (a PutItem's key is read from its Item).
 */
export function exactlyOnceWrites(
  client: Pick<DynamoDBClient, 'send'>,
  keyNames: readonly string[],
  /**
   * How the client's callers see items: `document` when a document client wraps it. Its conversion
   * runs around each attempt, inside this middleware, so an item this middleware returns itself (the
   * write found applied) is converted here.
   */
  items: 'wire' | 'document' = 'wire',
): BuildMiddleware<object, MetadataBearer> {
  return (next) =>
    async (args: BuildHandlerArguments<object>): Promise<BuildHandlerOutput<MetadataBearer>> => {
      const request = args.request as HttpRequestLike;
      const kind = request?.headers ? writeKind(request) : undefined;
      const text = kind ? bodyText(request.body) : undefined;
      if (!kind || text === undefined) return next(args);
      const input = JSON.parse(text) as WriteInput;
      const token = randomBytes(12).toString('base64url');
      const body = JSON.stringify(withWriteToken(kind, input, token));
      request.body = body;
      for (const header of Object.keys(request.headers)) {
        if (header.toLowerCase() === 'content-length') request.headers[header] = String(Buffer.byteLength(body));
      }
      try {
        return await next(args);
      } catch (error) {
        const attempts = (error as MetadataBearer).$metadata?.attempts ?? 1;
        const key = keyOf(input, keyNames);
        if (!(error instanceof ConditionalCheckFailedException) || attempts < 2 || !key) throw error;
        // Refused on a retry: an earlier attempt may have applied it. The item says whether it did.
        const { Item } = await client.send(
          new GetItemCommand({ TableName: input.TableName, Key: key, ConsistentRead: true }),
        );
        if (Item?.[WRITE_TOKEN]?.S !== token) throw error;
        const output = {
          $metadata: error.$metadata,
          ...(input.ReturnValues === 'ALL_NEW' ? { Attributes: items === 'document' ? unmarshall(Item) : Item } : {}),
        };
        return { output, response: { statusCode: 200, headers: {} } };
      }
    };
}
