/**
 * The gateway table's shape, one definition for the CDK stack that creates it in AWS
 * (lib/mcp-gateway.ts) and for the local gateway that creates it in DynamoDB Local or dynalite
 * (state/dynamo-client.ts): two string keys, and items that DynamoDB's TTL removes after `expiresAt`
 * (epoch seconds). The item layout within the keys is in state/items.ts.
 */
export const TABLE_KEYS = { partition: 'pk', sort: 'sk' } as const;

/** The attribute DynamoDB's time to live reads (epoch seconds). */
export const TTL_ATTRIBUTE = 'expiresAt';
