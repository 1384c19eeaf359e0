import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  isInitializeRequest,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { listen } from '../loopback';
import { SessionEventStore } from './v1-push-server';

/**
 * A server for the official conformance suite's server scenarios (`@modelcontextprotocol/conformance`,
 * 2025-11-25), written here from the scenarios' own requirement texts with the v1 SDK's low-level
 * `Server`: the tools, resources and prompts each scenario names, logging, completion, subscriptions,
 * an event store (priming events, `retry`) and `test_reconnection`, which ends its call's stream
 * mid-call (SSE polling). Host/Origin are checked like a loopback server must (DNS rebinding).
 * test/conformance/ runs the suite against it directly and through the gateway.
 */

// A 1×1 PNG and a 1-sample 8 kHz mono WAV, built here rather than pasted.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
function wav(): string {
  const header = Buffer.alloc(46);
  header.write('RIFF', 0);
  header.writeUInt32LE(38, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36);
  header.writeUInt32LE(2, 40);
  return header.toString('base64');
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const noArgs = { type: 'object' as const, properties: {} };

const TOOLS = [
  { name: 'test_simple_text', description: 'Returns simple text.', inputSchema: noArgs },
  { name: 'test_image_content', description: 'Returns an image.', inputSchema: noArgs },
  { name: 'test_audio_content', description: 'Returns audio.', inputSchema: noArgs },
  { name: 'test_embedded_resource', description: 'Returns an embedded resource.', inputSchema: noArgs },
  { name: 'test_multiple_content_types', description: 'Returns text, an image and a resource.', inputSchema: noArgs },
  { name: 'test_tool_with_logging', description: 'Logs three times while it runs.', inputSchema: noArgs },
  { name: 'test_tool_with_progress', description: 'Reports progress 0, 50, 100 of 100.', inputSchema: noArgs },
  { name: 'test_error_handling', description: 'Always fails (isError).', inputSchema: noArgs },
  {
    name: 'test_reconnection',
    description: 'Ends its stream mid-call (SSE polling), then answers.',
    inputSchema: noArgs,
  },
  {
    name: 'test_sampling',
    description: 'Asks the client LLM.',
    inputSchema: { type: 'object' as const, properties: { prompt: { type: 'string' } }, required: ['prompt'] },
  },
  {
    name: 'test_elicitation',
    description: 'Asks the user.',
    inputSchema: { type: 'object' as const, properties: { message: { type: 'string' } }, required: ['message'] },
  },
  { name: 'test_elicitation_sep1034_defaults', description: 'Asks with defaults (SEP-1034).', inputSchema: noArgs },
  { name: 'test_elicitation_sep1330_enums', description: 'Asks with every enum form (SEP-1330).', inputSchema: noArgs },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object' as const,
      $defs: {
        address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } },
      },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
  },
];

const SEP1034_SCHEMA = {
  type: 'object' as const,
  properties: {
    name: { type: 'string' as const, default: 'John Doe' },
    age: { type: 'integer' as const, default: 30 },
    score: { type: 'number' as const, default: 95.5 },
    status: { type: 'string' as const, enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean' as const, default: true },
  },
};

const SEP1330_SCHEMA = {
  type: 'object' as const,
  properties: {
    untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: {
      type: 'string',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    },
    untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
    titledMulti: {
      type: 'array',
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
};

function build(subscriptions: Set<string>): Server {
  const server = new Server(
    { name: 'gateway-conformance-server', version: '1.0.0' },
    {
      capabilities: {
        tools: {},
        resources: { subscribe: true },
        prompts: {},
        logging: {},
        completions: {},
      },
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    const log = (data: string) =>
      extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data } });
    switch (request.params.name) {
      case 'test_simple_text':
        return text('This is a simple text response for testing.');
      case 'test_image_content':
        return { content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] };
      case 'test_audio_content':
        return { content: [{ type: 'audio', data: wav(), mimeType: 'audio/wav' }] };
      case 'test_embedded_resource':
        return {
          content: [
            {
              type: 'resource',
              resource: {
                uri: 'test://embedded-resource',
                mimeType: 'text/plain',
                text: 'This is an embedded resource content.',
              },
            },
          ],
        };
      case 'test_multiple_content_types':
        return {
          content: [
            { type: 'text', text: 'Multiple content types test:' },
            { type: 'image', data: PNG, mimeType: 'image/png' },
            {
              type: 'resource',
              resource: {
                uri: 'test://mixed-content-resource',
                mimeType: 'application/json',
                text: JSON.stringify({ test: 'data', value: 123 }),
              },
            },
          ],
        };
      case 'test_tool_with_logging':
        await log('Tool execution started');
        await sleep(50);
        await log('Tool processing data');
        await sleep(50);
        await log('Tool execution completed');
        return text('Logging tool finished');
      case 'test_tool_with_progress': {
        const progressToken = request.params._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
          if (progressToken !== undefined)
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken, progress, total: 100 },
            });
          if (progress < 100) await sleep(50);
        }
        return text('Progress tool finished');
      }
      case 'test_error_handling':
        return {
          isError: true,
          content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
        };
      case 'test_reconnection':
        // SSE polling: say so on the call's stream (a client then reads it as SSE), end the stream
        // (the client resumes it with Last-Event-ID), and answer after that.
        await log('closing the stream; resume it with Last-Event-ID');
        extra.closeSSEStream?.();
        await sleep(100);
        return text('Reconnection test completed: the client resumed the stream.');
      case 'test_sampling': {
        const result = await extra.sendRequest(
          {
            method: 'sampling/createMessage',
            params: {
              messages: [{ role: 'user', content: { type: 'text', text: String(args.prompt ?? '') } }],
              maxTokens: 100,
            },
          },
          CreateMessageResultSchema,
        );
        const content = Array.isArray(result.content) ? result.content[0] : result.content;
        return text(`LLM response: ${content?.type === 'text' ? content.text : JSON.stringify(content)}`);
      }
      case 'test_elicitation': {
        const result = await extra.sendRequest(
          {
            method: 'elicitation/create',
            params: {
              message: String(args.message ?? ''),
              requestedSchema: {
                type: 'object',
                properties: {
                  username: { type: 'string', description: "User's response" },
                  email: { type: 'string', description: "User's email address" },
                },
                required: ['username', 'email'],
              },
            },
          },
          ElicitResultSchema,
        );
        return text(`User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
      }
      case 'test_elicitation_sep1034_defaults':
      case 'test_elicitation_sep1330_enums': {
        const sep1034 = request.params.name === 'test_elicitation_sep1034_defaults';
        const result = await extra.sendRequest(
          {
            method: 'elicitation/create',
            params: {
              message: sep1034 ? 'Please review the defaults' : 'Please pick options',
              // The SDK's request type narrows enum forms; the schema is the scenario's, as written.
              requestedSchema: (sep1034 ? SEP1034_SCHEMA : SEP1330_SCHEMA) as typeof SEP1034_SCHEMA,
            },
          },
          ElicitResultSchema,
        );
        return text(`Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`);
      }
      case 'json_schema_2020_12_tool':
        return text(`received ${JSON.stringify(args)}`);
      default:
        return { isError: true, content: [{ type: 'text', text: `unknown tool ${request.params.name}` }] };
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: [
      { uri: 'test://static-text', name: 'static-text', description: 'A static text resource', mimeType: 'text/plain' },
      { uri: 'test://static-binary', name: 'static-binary', description: 'A static PNG', mimeType: 'image/png' },
      {
        uri: 'test://watched-resource',
        name: 'watched-resource',
        description: 'Can be subscribed to',
        mimeType: 'text/plain',
      },
    ],
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: 'test://template/{id}/data',
        name: 'template',
        description: 'Data by id',
        mimeType: 'application/json',
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => {
    const { uri } = request.params;
    if (uri === 'test://static-text')
      return { contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] };
    if (uri === 'test://static-binary') return { contents: [{ uri, mimeType: 'image/png', blob: PNG }] };
    if (uri === 'test://watched-resource') return { contents: [{ uri, mimeType: 'text/plain', text: 'Watched' }] };
    const id = /^test:\/\/template\/([^/]+)\/data$/.exec(uri)?.[1];
    if (id !== undefined) {
      const data = { id, templateTest: true, data: `Data for ID: ${id}` };
      return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data) }] };
    }
    throw new Error(`unknown resource ${uri}`);
  });
  server.setRequestHandler(SubscribeRequestSchema, (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, () => ({
    prompts: [
      { name: 'test_simple_prompt', description: 'A prompt without arguments' },
      {
        name: 'test_prompt_with_arguments',
        description: 'A prompt with two arguments',
        arguments: [
          { name: 'arg1', description: 'First test argument', required: true },
          { name: 'arg2', description: 'Second test argument', required: true },
        ],
      },
      {
        name: 'test_prompt_with_embedded_resource',
        description: 'A prompt embedding a resource',
        arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
      },
      { name: 'test_prompt_with_image', description: 'A prompt with an image' },
    ],
  }));
  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    const args = request.params.arguments ?? {};
    switch (request.params.name) {
      case 'test_simple_prompt':
        return {
          messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
        };
      case 'test_prompt_with_arguments':
        return {
          messages: [
            {
              role: 'user',
              content: { type: 'text', text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'` },
            },
          ],
        };
      case 'test_prompt_with_embedded_resource':
        return {
          messages: [
            {
              role: 'user',
              content: {
                type: 'resource',
                resource: {
                  uri: args.resourceUri ?? 'test://embedded',
                  mimeType: 'text/plain',
                  text: 'Embedded resource content for testing.',
                },
              },
            },
            { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
          ],
        };
      case 'test_prompt_with_image':
        return {
          messages: [
            { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
            { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
          ],
        };
      default:
        throw new Error(`unknown prompt ${request.params.name}`);
    }
  });
  server.setRequestHandler(CompleteRequestSchema, (request) => {
    const words = ['paris', 'park', 'party', 'test', 'testing'];
    const values = words.filter((w) => w.startsWith(request.params.argument.value));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
}

const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/;

/** Rejects a request whose Host or Origin is not the loopback (DNS rebinding). */
function loopbackOnly(req: IncomingMessage): boolean {
  if (!LOOPBACK_HOST.test(req.headers.host ?? '')) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return LOOPBACK_HOST.test(new URL(origin).host);
  } catch {
    return false;
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  return raw ? JSON.parse(raw) : undefined;
}

function jsonError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

export async function startConformanceServer(): Promise<{ url: string; close(): Promise<void> }> {
  const transports: Record<string, StreamableHTTPServerTransport> = {};
  const servers = new Set<Server>();
  const subscriptions = new Set<string>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if ((req.url ?? '').split('?')[0] !== '/mcp') return void res.writeHead(404).end();
    if (!loopbackOnly(req)) return jsonError(res, 403, 'Forbidden: Host or Origin is not the loopback');
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    let transport = sessionId ? transports[sessionId] : undefined;
    if (!transport && !sessionId && req.method === 'POST' && isInitializeRequest(body)) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new SessionEventStore(),
        retryInterval: 100,
        onsessioninitialized: (id) => {
          transports[id] = created;
        },
      });
      created.onclose = () => {
        if (created.sessionId) delete transports[created.sessionId];
      };
      const server = build(subscriptions);
      servers.add(server);
      await server.connect(created);
      transport = created;
    }
    if (!transport) return jsonError(res, sessionId ? 404 : 400, sessionId ? 'Session not found' : 'No session');
    await transport.handleRequest(req, res, body);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) jsonError(res, 500, String(error));
      else res.destroy();
    });
  });
  http.requestTimeout = 0;
  const { base, close } = await listen(http);
  return {
    url: `${base}/mcp`,
    close: async () => {
      await Promise.allSettled([...servers].map((s) => s.close()));
      await close();
    },
  };
}
