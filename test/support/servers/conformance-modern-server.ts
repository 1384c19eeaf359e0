import { randomBytes } from 'node:crypto';
import {
  completable,
  createMcpHandler,
  createRequestStateCodec,
  fromJsonSchema,
  inputRequired,
  type McpHttpHandler,
  McpServer,
  type RequestStateCodec,
  ResourceNotFoundError,
  ResourceTemplate,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
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
import { type RoundState, registerInputRequiredTools } from './conformance-modern-mrtr';
import {
  type ConformanceTasks,
  createConformanceTasks,
  refuseUndeclaredTaskCall,
  TASKS_EXTENSION,
  withoutTaskContent,
} from './conformance-tasks-server';
import { serveFetch } from './serve-fetch';

/**
 * A 2026-07-28 server for the official conformance suite's server scenarios
 * (`@modelcontextprotocol/conformance`, `--spec-version 2026-07-28`), written here from the scenarios'
 * requirement texts with the v2 SDK (`createMcpHandler`, modern only: `legacy: 'reject'`): the tools,
 * resources and prompts the scenarios name (the same content as the 2025-11-25 server,
 * `conformance-content.ts`), the multi round-trip tools (`conformance-modern-mrtr.ts`), the diagnostic
 * tools of `server-stateless` (a tool needing an undeclared capability, one that asks, one that logs,
 * and two that change the tool and prompt lists, announced on `subscriptions/listen` streams), a tool
 * with an `x-mcp-header` parameter (SEP-2243) and Host/Origin checks (DNS rebinding), and the Tasks
 * extension the `tasks-*` scenarios exercise (declared in `server/discover`; conformance-tasks-server.ts).
 * Per-request `_meta`, discovery, caching hints, errors and listen streams are the SDK's.
 * test/conformance/ runs the suite against it directly and through the gateway.
 */

// Declared apart: the SDK's JSON Schema type does not name the `x-mcp-header` extension keyword.
const REGION_SCHEMA = {
  type: 'object' as const,
  properties: { region: { type: 'string' as const, 'x-mcp-header': 'Region' } },
  required: ['region'],
};

/** What the list-changing diagnostic tools toggle: one extra tool, one extra prompt. */
interface ListState {
  extraTool: boolean;
  extraPrompt: boolean;
}

function build(
  lists: ListState,
  codec: RequestStateCodec<RoundState>,
  tasks: ConformanceTasks,
  handler: () => McpHttpHandler,
): McpServer {
  const server = new McpServer(
    { name: 'gateway-conformance-modern-server', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: {},
        logging: {},
        completions: {},
        extensions: { [TASKS_EXTENSION]: {} },
      },
      requestState: { verify: codec.verify },
    },
  );

  for (const [name, { description, result }] of Object.entries(FIXED_TOOLS))
    server.registerTool(name, { description }, async () => result());

  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress 0, 50, 100 of 100.' },
    async (ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      await spreadOver(
        PROGRESS_STEPS.map((progress) => async () => {
          if (progressToken !== undefined)
            await ctx.mcpReq.notify({
              method: 'notifications/progress',
              params: { progressToken, progress, total: 100 },
            });
        }),
      );
      return text('Progress tool finished');
    },
  );

  server.registerTool(
    JSON_SCHEMA_2020_12_TOOL.name,
    {
      description: JSON_SCHEMA_2020_12_TOOL.description,
      inputSchema: fromJsonSchema(JSON_SCHEMA_2020_12_TOOL.inputSchema),
    },
    async (args) => text(`received ${JSON.stringify(args)}`),
  );

  // SEP-2243: the `region` argument is mirrored in the `Mcp-Param-Region` header, which the SDK checks.
  server.registerTool(
    'test_header_parameter',
    {
      description: 'Echoes a region that is also sent as a header (x-mcp-header).',
      inputSchema: fromJsonSchema<{ region: string }>(REGION_SCHEMA),
    },
    async ({ region }) => text(`region ${region}`),
  );

  // server-stateless: it always asks the client LLM; the SDK refuses the input request of a client
  // that did not declare sampling (-32021, HTTP 400) instead of sending it.
  server.registerTool('test_missing_capability', { description: 'Needs the sampling capability.' }, async () =>
    inputRequired({
      inputRequests: {
        llm: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Say something' } }],
          maxTokens: 20,
        }),
      },
    }),
  );

  // server-stateless: asking on 2026-07-28 is an input_required result, never a request on the stream.
  server.registerTool('test_streaming_elicitation', { description: 'Asks the user (input_required).' }, async (ctx) => {
    if (ctx.mcpReq.inputResponses?.answer !== undefined) return text('answered');
    return inputRequired({
      inputRequests: {
        answer: inputRequired.elicit({ message: 'Anything to add?', requestedSchema: z.object({ note: z.string() }) }),
      },
    });
  });

  // server-stateless: logs while it runs; the SDK sends none unless the request set a log level. No
  // pause between: the scenario reads this call's response for half a second only.
  server.registerTool('test_logging_tool', { description: 'Logs twice while it runs.' }, async (ctx) => {
    await ctx.mcpReq.log('info', 'Logging tool started');
    await ctx.mcpReq.log('info', 'Logging tool finished');
    return text('Logging tool finished');
  });

  server.registerTool('test_trigger_tool_change', { description: 'Adds or removes a tool.' }, async () => {
    lists.extraTool = !lists.extraTool;
    handler().notify.toolsChanged();
    return text(lists.extraTool ? 'test_extra_tool added' : 'test_extra_tool removed');
  });
  server.registerTool('test_trigger_prompt_change', { description: 'Adds or removes a prompt.' }, async () => {
    lists.extraPrompt = !lists.extraPrompt;
    handler().notify.promptsChanged();
    return text(lists.extraPrompt ? 'test_extra_prompt added' : 'test_extra_prompt removed');
  });
  if (lists.extraTool)
    server.registerTool('test_extra_tool', { description: 'Exists between two list changes.' }, async () =>
      text('extra'),
    );
  if (lists.extraPrompt) {
    server.registerPrompt('test_extra_prompt', { description: 'Exists between two list changes.' }, () => ({
      messages: [{ role: 'user', content: { type: 'text', text: 'extra' } }],
    }));
  }

  registerInputRequiredTools(server, codec);
  tasks.register(server);

  for (const [name, prompt] of Object.entries(PROMPTS)) {
    // test_prompt_with_arguments completes its arguments (completion-complete asks for arg1).
    const argsSchema = z.object(
      Object.fromEntries(
        prompt.arguments.map((argument) => [
          argument.name,
          completable(z.string().describe(argument.description), (value) => completions(value)),
        ]),
      ),
    );
    const messages = (args: Record<string, string | undefined>) => ({ messages: promptMessages(name, args) ?? [] });
    if (prompt.arguments.length === 0)
      server.registerPrompt(name, { description: prompt.description }, () => messages({}));
    else server.registerPrompt(name, { description: prompt.description, argsSchema }, (args) => messages(args));
  }

  for (const resource of STATIC_RESOURCES) {
    server.registerResource(
      resource.name,
      resource.uri,
      { description: resource.description, mimeType: resource.mimeType },
      (uri) => {
        const read = readResource(uri.href);
        if (!read) throw new ResourceNotFoundError(uri.href);
        return read;
      },
    );
  }
  server.registerResource(
    RESOURCE_TEMPLATE.name,
    new ResourceTemplate(RESOURCE_TEMPLATE.uriTemplate, { list: undefined }),
    { description: RESOURCE_TEMPLATE.description, mimeType: RESOURCE_TEMPLATE.mimeType },
    (uri) => {
      const read = readResource(uri.href);
      if (!read) throw new ResourceNotFoundError(uri.href);
      return read;
    },
  );
  return server;
}

export async function startConformanceModernServer(): Promise<{ url: string; close(): Promise<void> }> {
  const lists: ListState = { extraTool: false, extraPrompt: false };
  const codec = createRequestStateCodec<RoundState>({ key: randomBytes(32).toString('base64'), ttlSeconds: 300 });
  const tasks = createConformanceTasks();
  const handler: McpHttpHandler = createMcpHandler(() => build(lists, codec, tasks, () => handler), {
    legacy: 'reject',
    onerror: () => undefined,
  });
  const served = await serveFetch(async (request) => {
    const headers = {
      host: request.headers.get('host') ?? undefined,
      origin: request.headers.get('origin') ?? undefined,
    };
    if (!loopbackOnly(headers)) {
      return Response.json(
        { jsonrpc: '2.0', error: { code: -32000, message: 'Forbidden: Host or Origin is not the loopback' }, id: null },
        { status: 403 },
      );
    }
    return (await refuseUndeclaredTaskCall(request)) ?? withoutTaskContent(await handler.fetch(request));
  });
  return {
    url: served.url,
    close: async () => {
      tasks.close();
      await handler.close().catch(() => undefined);
      await served.close();
    },
  };
}
