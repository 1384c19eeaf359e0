import {
  acceptedContent,
  type CallToolResult,
  inputRequired,
  inputResponse,
  McpServer,
  type RequestStateCodec,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ConsentBook, ConsentOutcome } from './consent-book';

/**
 * What the 2026-07-28 ("modern") demo target does, on the official v2 SDK: tools written in
 * `inputRequired(...)` style. They ask for input with an input_required result and a requestState
 * minted by the SDK's HMAC codec, and finish when the client retries with `inputResponses`. The HTTP
 * side is `modern-host.ts`.
 */

export interface StatePayload {
  tool: string;
  step: string;
  name?: string;
  /** access_github_repo: the consent request and the repository it is for. */
  consentId?: string;
  repo?: string;
}

export interface ModernToolsContext {
  name: string;
  /** Mints a requestState (and records it for tests). */
  mint(payload: StatePayload): Promise<string>;
  consents: ConsentBook;
  consentTimeoutMs: number;
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const errorText = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }], isError: true });

const REFUSED: Record<Exclude<ConsentOutcome, 'granted'>, string> = {
  denied: 'denied on the consent page',
  timeout: 'not confirmed: the consent page was not completed in time',
  aborted: 'not confirmed: the call ended before the consent page was completed',
  unknown: 'not confirmed: the consent request is gone',
};

export function createModernDemoServer(
  tools: ModernToolsContext,
  verify: RequestStateCodec<StatePayload>['verify'],
): McpServer {
  const { mint } = tools;
  const server = new McpServer(
    { name: tools.name, version: '2.0.0' },
    { capabilities: { tools: {}, prompts: {}, resources: {} }, requestState: { verify } },
  );

  server.registerTool(
    'echo',
    { description: 'Echoes the text back.', inputSchema: z.object({ text: z.string() }) },
    ({ text: t }) => text(`echo: ${t}`),
  );

  server.registerTool(
    'use_aws',
    {
      description: 'Asks the user (form elicitation) before running an AWS CLI command.',
      inputSchema: z.object({ command: z.string() }),
    },
    async ({ command }, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
      const state = ctx.mcpReq.requestState<StatePayload>();
      if (answer.kind === 'elicit' && state?.tool === 'use_aws') {
        const content = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', z.object({ confirm: z.boolean() }));
        if (content?.confirm === true) return text(`executed: ${command}`);
        return text(`not executed (${answer.action === 'accept' ? 'confirm false' : answer.action})`);
      }
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: `Run \`${command}\`?`,
            requestedSchema: {
              type: 'object',
              properties: { confirm: { type: 'boolean', title: 'Confirm' } },
              required: ['confirm'],
            },
          }),
        },
        requestState: await mint({ tool: 'use_aws', step: 'confirm' }),
      });
    },
  );

  server.registerTool(
    'access_github_repo',
    {
      description: "URL-mode elicitation: asks the user to allow repository access on the target's consent page.",
      inputSchema: z.object({ repo: z.string() }),
    },
    async ({ repo }, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'authorize');
      const state = ctx.mcpReq.requestState<StatePayload>();
      if (answer.kind === 'elicit' && state?.step === 'authorize' && state.consentId && state.repo === repo) {
        if (answer.action !== 'accept') {
          tools.consents.discard(state.consentId);
          return text(`access to ${repo} not granted (${answer.action})`);
        }
        // `accept` only means the user agreed to open the page: the decision is made there.
        const outcome = await tools.consents.wait(state.consentId, {
          timeoutMs: tools.consentTimeoutMs,
          signal: ctx.mcpReq.signal,
        });
        return outcome === 'granted' ? text(`accessed ${repo}`) : errorText(`access to ${repo} ${REFUSED[outcome]}`);
      }
      // The 2026-07-28 client names itself on every request (`_meta` clientInfo), shown on the consent page.
      const envelope = ctx.mcpReq.envelope as
        | Record<string, { name?: string; version?: string } | undefined>
        | undefined;
      const client = envelope?.['io.modelcontextprotocol/clientInfo'];
      const consent = tools.consents.open(`Authorize access to ${repo}`, {
        expiresInMs: tools.consentTimeoutMs,
        via: client?.name ? `${client.name}${client.version ? ` ${client.version}` : ''}` : undefined,
      });
      return inputRequired({
        inputRequests: { authorize: inputRequired.elicitUrl({ message: consent.message, url: consent.url }) },
        requestState: await mint({ tool: 'access_github_repo', step: 'authorize', consentId: consent.id, repo }),
      });
    },
  );

  // No requestState at all: the retry must reach the target without one.
  server.registerTool(
    'confirm_stateless',
    { description: 'Form elicitation without requestState.', inputSchema: z.object({ action: z.string() }) },
    async ({ action }, ctx) => {
      const content = acceptedContent(ctx.mcpReq.inputResponses, 'ok', z.object({ ok: z.boolean() }));
      if (content) return text(content.ok ? `done: ${action}` : `skipped: ${action}`);
      return inputRequired({
        inputRequests: {
          ok: inputRequired.elicit({
            message: `Do ${action}?`,
            requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
          }),
        },
      });
    },
  );

  server.registerTool(
    'multi_elicit',
    { description: 'Two rounds: name, then age (state carries the name).' },
    async (ctx) => {
      const state = ctx.mcpReq.requestState<StatePayload>();
      const name = acceptedContent(ctx.mcpReq.inputResponses, 'name', z.object({ name: z.string() }));
      const age = acceptedContent(ctx.mcpReq.inputResponses, 'age', z.object({ age: z.number() }));
      if (state?.step === 'age' && age) return text(`hello ${state.name}, ${age.age}`);
      if (state?.step === 'name' && name) {
        return inputRequired({
          inputRequests: {
            age: inputRequired.elicit({
              message: `How old are you, ${name.name}?`,
              requestedSchema: { type: 'object', properties: { age: { type: 'integer' } }, required: ['age'] },
            }),
          },
          requestState: await mint({ tool: 'multi_elicit', step: 'age', name: name.name }),
        });
      }
      return inputRequired({
        inputRequests: {
          name: inputRequired.elicit({
            message: 'What is your name?',
            requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          }),
        },
        requestState: await mint({ tool: 'multi_elicit', step: 'name' }),
      });
    },
  );

  server.registerTool(
    'sample',
    { description: 'Asks the client to sample an LLM.', inputSchema: z.object({ prompt: z.string() }) },
    async ({ prompt }, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'llm');
      if (answer.kind === 'sampling') {
        const blocks = Array.isArray(answer.result.content) ? answer.result.content : [answer.result.content];
        return text(
          `sampled: ${answer.result.model}: ${blocks.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('')}`,
        );
      }
      return inputRequired({
        inputRequests: {
          llm: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
            maxTokens: 100,
          }),
        },
      });
    },
  );

  server.registerTool('list_roots', { description: 'Lists the client roots.' }, async (ctx) => {
    const answer = inputResponse(ctx.mcpReq.inputResponses, 'roots');
    if (answer.kind === 'roots') return text(`roots: ${answer.roots.map((r) => r.uri).join(',')}`);
    return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
  });

  server.registerTool('fail', { description: 'Always fails (isError result).' }, () => errorText('failed on purpose'));

  server.registerPrompt(
    'greeting',
    { description: 'Greets someone.', argsSchema: z.object({ name: z.string() }) },
    ({ name }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }],
    }),
  );

  server.registerResource(
    'readme',
    'modern://readme',
    { mimeType: 'text/plain', description: 'About this target.' },
    (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'modern demo target readme' }],
    }),
  );

  return server;
}
