import { createParser } from 'eventsource-parser';
import { type LocalGateway, startLocalGateway } from '../../dev/local-gateway';
import type { GatewayConfigInput } from '../../lambda/config/schema';
import type { GatewayLogger } from '../../lambda/observability/logger';
import { unreachableDynamo } from '../support/unreachable-dynamo';
import {
  type ConfigSpec,
  type GatewayFixture,
  type TargetSpecs,
  UNREACHABLE_DYNAMODB,
  type WithGatewayOptions,
  withGateway,
} from '../support/with-gateway';

/** Shared set-up for the 2026-07-28 tests: loopback only, DynamoDB unreachable, everything closed after. */

export type Json = Record<string, any>; // test-side JSON access

/** Nothing listens on port 9: every DynamoDB call would fail. The modern path must not make any. */
export { UNREACHABLE_DYNAMODB };

export const KEY_A = 'test-key-A-0123456789abcdefghijklmnopqrstuvwxyz';
export const KEY_B = 'test-key-B-0123456789abcdefghijklmnopqrstuvwxyz';

export const SILENT: GatewayLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * `withGateway` for the 2026-07-28 tests: the local server, DynamoDB unreachable (unless `dynamo:
 * 'counted'`, for 2025-era sessions), the requestState key KEY_A unless the configuration names keys,
 * a silent logger and a 20 s request timeout.
 */
export function withModernGateway<T extends TargetSpecs = Record<never, never>>(
  config: ConfigSpec<T>,
  options: WithGatewayOptions<T> = {},
): GatewayFixture<T> {
  const keyed = (raw: GatewayConfigInput): GatewayConfigInput => ({ requestStateKeys: { current: KEY_A }, ...raw });
  return withGateway(typeof config === 'function' ? (targets) => keyed(config(targets)) : keyed(config), {
    dynamo: 'unreachable',
    timeoutMs: 20_000,
    localServer: { logger: SILENT },
    ...options,
  });
}

/**
 * One local gateway for a single test that needs its parts (`deps`), with the same defaults; suites
 * set theirs up with `withModernGateway`. DynamoDB unreachable unless `dynamodbEndpoint` is given
 * (`'embedded'`: an in-memory dynalite, for 2025-era sessions).
 */
export async function startGateway(
  config: GatewayConfigInput,
  extra: { logger?: GatewayLogger; dynamodbEndpoint?: string; requestTimeoutMs?: number } = {},
): Promise<LocalGateway> {
  return startLocalGateway({
    port: 0,
    demo: false,
    startupReport: false,
    dynamodbEndpoint:
      extra.dynamodbEndpoint === 'embedded' ? undefined : (extra.dynamodbEndpoint ?? (await unreachableDynamo())),
    logger: extra.logger ?? SILENT,
    config: { requestStateKeys: { current: KEY_A }, ...config },
    requestTimeoutMs: extra.requestTimeoutMs ?? 20_000,
  });
}

export const MODERN = '2026-07-28';

export function meta(capabilities: Json = { elicitation: { form: {}, url: {} } }): Json {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'my-agent', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

/** The reference page's headers for a 2026-07-28 request (the Authorization header is not checked: auth none). */
export function modernHeaders(method: string, name?: string): Record<string, string> {
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    Authorization: 'Bearer YOUR_ACCESS_TOKEN',
    'MCP-Protocol-Version': MODERN,
    'Mcp-Method': method,
  };
  if (name !== undefined) headers['Mcp-Name'] = name;
  return headers;
}

export async function post(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<{ status: number; body: Json; headers: Headers }> {
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const contentType = res.headers.get('content-type') ?? '';
  if (contentType.includes('text/event-stream')) {
    const messages = await sseMessages(res);
    return { status: res.status, body: messages[messages.length - 1] ?? {}, headers: res.headers };
  }
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : {}, headers: res.headers };
}

/** A tools/call (or other) request with `_meta`, the mirrored headers filled in from the body. */
export async function modernCall(
  url: string,
  method: string,
  params: Json,
  id: string | number = 1,
  capabilities?: Json,
) {
  const name =
    method === 'resources/read'
      ? params.uri
      : method === 'tools/call' || method === 'prompts/get'
        ? params.name
        : undefined;
  return post(url, modernHeaders(method, name), {
    jsonrpc: '2.0',
    id,
    method,
    params: { ...params, _meta: meta(capabilities) },
  });
}

export async function sseMessages(res: Response): Promise<Json[]> {
  const messages: Json[] = [];
  const parser = createParser({ onEvent: (event) => event.data && messages.push(JSON.parse(event.data)) });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parser.feed(value);
  }
  return messages;
}
