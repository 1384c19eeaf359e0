import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/**
 * A DynamoDB item as plain values: what the DocumentClient's unmarshalling gives (numbers as numbers,
 * sets as `Set`s, binary as bytes), for the one read every 2025 request makes (`loadSession`), which
 * goes around the DocumentClient: its generic walk of every command's input and output cost about
 * 10–15 % of the request's CPU in the client (`npx tsx bench/sdk-request.ts`).
 */
export function itemOf(item: Record<string, AttributeValue>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(item)) out[key] = plainValue(item[key] as AttributeValue);
  return out;
}

function plainValue(value: AttributeValue): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return Number(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.M !== undefined) return itemOf(value.M);
  if (value.L !== undefined) return value.L.map(plainValue);
  if (value.SS !== undefined) return new Set(value.SS);
  if (value.NS !== undefined) return new Set(value.NS.map(Number));
  if (value.B !== undefined) return value.B;
  if (value.BS !== undefined) return new Set(value.BS);
  return undefined;
}
