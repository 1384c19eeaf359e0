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
import {
  completions,
  FIXED_TOOLS,
  JSON_SCHEMA_2020_12_TOOL,
  loopbackOnly,
  PROGRESS_STEPS,
  PROMPTS,
  promptMessages,
  RESOURCE_TEMPLATE,
  readResource,
  STATIC_RESOURCES,
  spreadOver,
  text,
} from './conformance-content';
import { SessionEventStore } from './v1-push-server';

/**
 * A server for the official conformance suite's server scenarios (`@modelcontextprotocol/conformance`,
 * 2025-11-25), written here from the scenarios' own requirement texts with the v1 SDK's low-level
 * `Server`: the tools, resources and prompts each scenario names, logging, completion, subscriptions,
 * an event store (priming events, `retry`) and `test_reconnection`, which ends its call's stream
 * mid-call (SSE polling). Host/Origin are checked like a loopback server must (DNS rebinding). What it
 * answers like the 2026-07-28 server is `conformance-content.ts`. test/conformance/ runs the suite
 * against it directly and through the gateway.
 */

const noArgs = { type: 'object' as const, properties: {} };

const TOOLS = [
  ...Object.entries(FIXED_TOOLS).map(([name, { description }]) => ({ name, description, inputSchema: noArgs })),
  { name: 'test_tool_with_logging', description: 'Logs three times while it runs.', inputSchema: noArgs },
  { name: 'test_tool_with_progress', description: 'Reports progress 0, 50, 100 of 100.', inputSchema: noArgs },
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
  JSON_SCHEMA_2020_12_TOOL,
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
    const name = request.params.name;
    if (name in FIXED_TOOLS) return FIXED_TOOLS[name as keyof typeof FIXED_TOOLS].result();
    switch (name) {
      case 'test_tool_with_logging':
        await spreadOver(
          ['Tool execution started', 'Tool processing data', 'Tool execution completed'].map((line) => () => log(line)),
        );
        return text('Logging tool finished');
      case 'test_tool_with_progress': {
        const progressToken = request.params._meta?.progressToken;
        await spreadOver(
          PROGRESS_STEPS.map((progress) => async () => {
            if (progressToken !== undefined)
              await extra.sendNotification({
                method: 'notifications/progress',
                params: { progressToken, progress, total: 100 },
              });
          }),
        );
        return text('Progress tool finished');
      }
      case 'test_reconnection':
        // SSE polling: say so on the call's stream (a client then reads it as SSE), end the stream
        // (the client resumes it with Last-Event-ID), and answer after that. What server-sse-polling
        // needs is the order (the stream ends before the result), not a pause: answered at once, the
        // result is sent while the stream is closed (kept in the event store, replayed on the resume).
        await log('closing the stream; resume it with Last-Event-ID');
        extra.closeSSEStream?.();
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
      ...STATIC_RESOURCES,
      {
        uri: 'test://watched-resource',
        name: 'watched-resource',
        description: 'Can be subscribed to',
        mimeType: 'text/plain',
      },
    ],
  }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({ resourceTemplates: [RESOURCE_TEMPLATE] }));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => {
    const { uri } = request.params;
    if (uri === 'test://watched-resource') return { contents: [{ uri, mimeType: 'text/plain', text: 'Watched' }] };
    const read = readResource(uri);
    if (!read) throw new Error(`unknown resource ${uri}`);
    return read;
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
    prompts: Object.entries(PROMPTS).map(([name, prompt]) => ({
      name,
      description: prompt.description,
      ...(prompt.arguments.length > 0 && {
        arguments: prompt.arguments.map((argument) => ({ ...argument, required: true })),
      }),
    })),
  }));
  server.setRequestHandler(GetPromptRequestSchema, (request) => {
    const messages = promptMessages(request.params.name, request.params.arguments ?? {});
    if (!messages) throw new Error(`unknown prompt ${request.params.name}`);
    return { messages };
  });
  server.setRequestHandler(CompleteRequestSchema, (request) => {
    const values = completions(request.params.argument.value);
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return server;
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
    if (!loopbackOnly(req.headers)) return jsonError(res, 403, 'Forbidden: Host or Origin is not the loopback');
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
