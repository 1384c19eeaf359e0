import { randomBytes, randomUUID } from 'node:crypto';
import {
  acceptedContent,
  type CallToolResult,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  McpServer,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * The tools of the v2 (`@modelcontextprotocol/server` 2.4) test servers, defined once for both eras
 * as the SDK recommends (`docs/servers/input-required.md` in the `@modelcontextprotocol/server` repository):
 *
 * - era-agnostic, `inputRequired(...)` style: `deploy` (form), `connect_account` (URL, with a
 *   requestState minted by the SDK's HMAC codec), `summarize` (sampling), `list_workspace` (roots),
 *   `long_task` (progress + logging through `ctx.mcpReq.notify` / `ctx.mcpReq.log`), `wait`
 *   (cancellation). On 2026-07-28 they answer `input_required`; on a sessionful 2025 connection the
 *   SDK's legacy shim pushes the request on the call's POST stream and re-enters the handler.
 * - 2025 only (registered when the factory builds a `legacy` instance): push style without a related
 *   request, as hand-written tools often are: `deploy_push` (`ctx.mcpReq.elicitInput(params)`),
 *   `summarize_push` (`ctx.mcpReq.requestSampling(params)`) — both go out on the standalone GET
 *   stream — and `read_private`, which throws `UrlElicitationRequiredError` (-32042).
 */

export interface V2ToolStats {
  /** Server-to-client requests the push-style tools sent, and answers they got. */
  asked: Record<string, number>;
  answered: Record<string, number>;
  /** Tool handlers that saw their abort signal fire, by era. */
  abortedTools: string[];
  /** Abortable tool handlers that started, by era (a test cancels a call once it runs). */
  startedTools: string[];
}

export function newToolStats(): V2ToolStats {
  return { asked: {}, answered: {}, abortedTools: [], startedTools: [] };
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const ConfirmSchema = z.object({ confirm: z.boolean() });

export function createToolFactory(stats: V2ToolStats) {
  const codec = createRequestStateCodec<{ service: string }>({
    key: randomBytes(32).toString('base64'),
    ttlSeconds: 300,
  });
  const authorized = new Set<string>();
  const count = (map: Record<string, number>, key: string) => {
    map[key] = (map[key] ?? 0) + 1;
  };

  return (era: 'legacy' | 'modern'): McpServer => {
    const server = new McpServer(
      { name: 'v2-server', version: '2.4.0' },
      { capabilities: { logging: {} }, requestState: { verify: codec.verify } },
    );

    server.registerTool(
      'deploy',
      { description: 'Asks for confirmation (form) before deploying.', inputSchema: z.object({ env: z.string() }) },
      async ({ env }, ctx) => {
        const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
        if (answer.kind === 'elicit') {
          const content = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', ConfirmSchema);
          return text(content?.confirm ? `deployed to ${env}` : `not deployed to ${env} (${answer.action})`);
        }
        return inputRequired({
          inputRequests: {
            confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: ConfirmSchema }),
          },
        });
      },
    );

    server.registerTool(
      'connect_account',
      { description: 'Sends the user to a consent page (URL).', inputSchema: z.object({ service: z.string() }) },
      async ({ service }, ctx) => {
        const answer = inputResponse(ctx.mcpReq.inputResponses, 'consent');
        if (answer.kind === 'elicit' && ctx.mcpReq.requestState<{ service: string }>()?.service === service) {
          return text(
            answer.action === 'accept' ? `connected ${service}` : `${service} not connected (${answer.action})`,
          );
        }
        return inputRequired({
          inputRequests: {
            consent: inputRequired.elicitUrl({
              message: `Connect your ${service} account`,
              url: `https://accounts.example/connect?service=${encodeURIComponent(service)}`,
            }),
          },
          requestState: await codec.mint({ service }),
        });
      },
    );

    server.registerTool(
      'summarize',
      { description: 'Asks the client LLM for a summary (sampling).', inputSchema: z.object({ topic: z.string() }) },
      async ({ topic }, ctx) => {
        const answer = inputResponse(ctx.mcpReq.inputResponses, 'llm');
        if (answer.kind === 'sampling') {
          const content = Array.isArray(answer.result.content) ? answer.result.content[0] : answer.result.content;
          return text(`summary by ${answer.result.model}: ${content?.type === 'text' ? content.text : '?'}`);
        }
        return inputRequired({
          inputRequests: {
            llm: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${topic}` } }],
              maxTokens: 50,
            }),
          },
        });
      },
    );

    server.registerTool('list_workspace', { description: "Lists the client's roots." }, async (ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'roots');
      if (answer.kind === 'roots') return text(`roots: ${answer.roots.map((r) => r.uri).join(',')}`);
      return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
    });

    server.registerTool(
      'long_task',
      {
        description: 'Reports progress per step and logs (debug and info per step, a warning at the end).',
        inputSchema: z.object({ steps: z.number().int().min(1).max(10) }),
      },
      async ({ steps }, ctx) => {
        const progressToken = ctx.mcpReq._meta?.progressToken;
        // No pause between steps: every message goes on the call's own stream (`ctx.mcpReq.notify`), in
        // order before the result, however quickly the steps follow each other.
        for (let i = 1; i <= steps; i++) {
          if (progressToken !== undefined) {
            await ctx.mcpReq.notify({
              method: 'notifications/progress',
              params: { progressToken, progress: i, total: steps, message: `step ${i}` },
            });
          }
          await ctx.mcpReq.log('debug', `step ${i} detail`);
          await ctx.mcpReq.log('info', `step ${i}`);
        }
        await ctx.mcpReq.log('warning', `long_task finished ${steps}`);
        return text(`finished ${steps} steps`);
      },
    );

    server.registerTool(
      'wait',
      { description: 'Waits (abortable).', inputSchema: z.object({ ms: z.number().int().max(60_000) }) },
      async ({ ms }, ctx) => {
        stats.startedTools.push(`wait (${era})`);
        const done = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), ms);
          ctx.mcpReq.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve(false);
          });
        });
        if (!done) stats.abortedTools.push(`wait (${era})`);
        return text(done ? `waited ${ms}` : 'cancelled');
      },
    );

    if (era === 'modern') return server;

    server.registerTool(
      'deploy_push',
      { description: 'Asks for confirmation (form), push style.', inputSchema: z.object({ env: z.string() }) },
      async ({ env }, ctx) => {
        count(stats.asked, 'elicitation/create');
        const answer = await ctx.mcpReq.elicitInput({
          mode: 'form',
          message: `Deploy to ${env}?`,
          requestedSchema: {
            type: 'object',
            properties: { confirm: { type: 'boolean', title: 'Deploy now?' } },
            required: ['confirm'],
          },
        });
        count(stats.answered, 'elicitation/create');
        if (answer.action === 'accept' && answer.content?.confirm === true) return text(`deployed to ${env}`);
        return text(`not deployed to ${env} (${answer.action})`);
      },
    );

    server.registerTool(
      'summarize_push',
      { description: 'Asks the client LLM for a summary, push style.', inputSchema: z.object({ topic: z.string() }) },
      async ({ topic }, ctx) => {
        count(stats.asked, 'sampling/createMessage');
        const result = await ctx.mcpReq.requestSampling({
          messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${topic}` } }],
          maxTokens: 50,
        });
        count(stats.answered, 'sampling/createMessage');
        const content = Array.isArray(result.content) ? result.content[0] : result.content;
        return text(`summary by ${result.model}: ${content?.type === 'text' ? content.text : '?'}`);
      },
    );

    server.registerTool(
      'read_private',
      {
        description: 'Needs an out-of-band authorization first (-32042).',
        inputSchema: z.object({ resource: z.string() }),
      },
      async ({ resource }) => {
        if (authorized.has(resource)) return text(`contents of ${resource}`);
        authorized.add(resource);
        throw new UrlElicitationRequiredError([
          {
            mode: 'url',
            elicitationId: randomUUID(),
            url: `https://auth.example/grant?resource=${encodeURIComponent(resource)}`,
            message: `Grant access to ${resource}`,
          },
        ]);
      },
    );

    return server;
  };
}
