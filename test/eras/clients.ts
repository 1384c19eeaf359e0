import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * The official SDK clients behind one small interface, each declaring every input capability and
 * answering the same way, so a test cell differs only in the client era and the target:
 * form → accept `{ confirm: true }`, URL → accept, sampling → model `test-llm` says "short and sweet",
 * roots → `file:///work/project`. What each client was asked is recorded (method, JSON-RPC id, params).
 */

export type ClientKind = 'v1' | 'v2 default' | 'v2 legacy' | 'v2 auto' | 'v2 pin 2026-07-28';

export const ALL_CLIENT_KINDS: ClientKind[] = ['v1', 'v2 default', 'v2 legacy', 'v2 auto', 'v2 pin 2026-07-28'];

export const CAPABILITIES = {
  elicitation: { form: {}, url: {} },
  sampling: {},
  roots: { listChanged: true },
};

export const SAMPLED = {
  role: 'assistant' as const,
  model: 'test-llm',
  content: { type: 'text' as const, text: 'short and sweet' },
};
export const ROOTS = { roots: [{ uri: 'file:///work/project', name: 'project' }] };

export interface Asked {
  method: string;
  id: string | number | undefined;
  params: Record<string, any>;
}

export interface CallOptions {
  onprogress?: (progress: { progress: number; total?: number; message?: string }) => void;
  signal?: AbortSignal;
  timeout?: number;
  /** Extra `_meta` for the call (e.g. the 2026-07-28 logLevel). */
  meta?: Record<string, unknown>;
}

export interface EraClient {
  kind: ClientKind;
  /** The negotiated protocol version. */
  version: string;
  /** The 2025 session id (undefined on 2026-07-28). */
  sessionId: string | undefined;
  asked: Asked[];
  logs: Array<{ level: string; data: unknown }>;
  callTool(
    name: string,
    args: Record<string, unknown>,
    options?: CallOptions,
  ): Promise<{ text: string; isError?: boolean }>;
  setLoggingLevel(level: 'debug' | 'info' | 'warning' | 'error'): Promise<void>;
  close(): Promise<void>;
}

function elicitAnswer(params: Record<string, any>) {
  return params.mode === 'url'
    ? { action: 'accept' as const }
    : { action: 'accept' as const, content: { confirm: true } };
}

function firstText(result: object): { text: string; isError?: boolean } {
  const { content, isError } = result as { content?: Array<{ type: string; text?: string }>; isError?: boolean };
  return { text: (content ?? []).map((c) => c.text ?? `[${c.type}]`).join(''), isError };
}

export async function connectClient(kind: ClientKind, url: string, timeoutMs = 8000): Promise<EraClient> {
  const asked: Asked[] = [];
  const logs: EraClient['logs'] = [];
  const info = { name: `era-matrix ${kind}`, version: '1.0.0' };

  if (kind === 'v1') {
    const client = new V1Client(info, { capabilities: CAPABILITIES });
    client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
      asked.push({ method: request.method, id: extra.requestId, params: request.params });
      return elicitAnswer(request.params);
    });
    client.setRequestHandler(CreateMessageRequestSchema, (request, extra) => {
      asked.push({ method: request.method, id: extra.requestId, params: request.params });
      return SAMPLED;
    });
    client.setRequestHandler(ListRootsRequestSchema, (request, extra) => {
      asked.push({ method: request.method, id: extra.requestId, params: request.params ?? {} });
      return ROOTS;
    });
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push({ level: n.params.level, data: n.params.data });
    });
    const transport = new V1Transport(new URL(url));
    await client.connect(transport, { timeout: timeoutMs });
    return {
      kind,
      version: transport.protocolVersion ?? '?',
      sessionId: transport.sessionId,
      asked,
      logs,
      callTool: async (name, args, options = {}) =>
        firstText(
          await client.callTool(
            { name, arguments: args, ...(options.meta ? { _meta: options.meta } : {}) },
            CallToolResultSchema,
            { timeout: timeoutMs, ...options },
          ),
        ),
      setLoggingLevel: async (level) => {
        await client.setLoggingLevel(level, { timeout: timeoutMs });
      },
      close: () => client.close(),
    };
  }

  const mode = kind === 'v2 auto' ? 'auto' : kind === 'v2 pin 2026-07-28' ? { pin: '2026-07-28' } : 'legacy';
  const client = new V2Client(info, {
    capabilities: CAPABILITIES,
    ...(kind === 'v2 default' ? {} : { versionNegotiation: { mode } }),
  });
  client.setRequestHandler('elicitation/create', (request, ctx) => {
    asked.push({ method: request.method, id: ctx.mcpReq.id, params: request.params });
    return elicitAnswer(request.params);
  });
  client.setRequestHandler('sampling/createMessage', (request, ctx) => {
    asked.push({ method: request.method, id: ctx.mcpReq.id, params: request.params });
    return SAMPLED;
  });
  client.setRequestHandler('roots/list', (request, ctx) => {
    asked.push({ method: request.method, id: ctx.mcpReq.id, params: request.params ?? {} });
    return ROOTS;
  });
  client.setNotificationHandler('notifications/message', (n) => {
    logs.push({ level: n.params.level, data: n.params.data });
  });
  const transport = new V2Transport(new URL(url));
  await client.connect(transport, { timeout: timeoutMs });
  return {
    kind,
    version: client.getNegotiatedProtocolVersion() ?? '?',
    sessionId: transport.sessionId,
    asked,
    logs,
    callTool: async (name, args, options = {}) =>
      firstText(
        await client.callTool(
          { name, arguments: args, ...(options.meta ? { _meta: options.meta } : {}) },
          { timeout: timeoutMs, ...options },
        ),
      ),
    setLoggingLevel: async (level) => {
      await client.setLoggingLevel(level, { timeout: timeoutMs });
    },
    close: () => client.close(),
  };
}
