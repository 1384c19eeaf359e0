import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  type CallToolResult,
  CreateMessageResultSchema,
  type ElicitRequestFormParams,
  type ElicitResult,
  ElicitResultSchema,
  ListRootsResultSchema,
  type LoggingLevel,
  type RequestId,
  type ServerNotification,
  type ServerRequest,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ConsentBook, ConsentOutcome } from './consent-book';

/**
 * What the 2025-era demo target does: its tools, prompt and resources, built per session on the
 * official v1 SDK's McpServer. Every tool answers with deterministic text. The HTTP side is
 * `legacy-host.ts`.
 *
 * Server-to-client requests (elicitation, sampling, roots) are always sent with
 * `relatedRequestId` = the tools/call request id, so the transport writes them on that tools/call
 * POST's SSE response stream, never on the standalone GET stream.
 */

export const LOG_LEVELS: readonly LoggingLevel[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

/** Server-to-client requests may wait for a human (elicitation), so allow longer than the SDK's 60 s default. */
const CLIENT_REQUEST_TIMEOUT_MS = 10 * 60 * 1000;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** `name version` of the connected MCP client, as its initialize named it (shown on the consent page). */
function clientOf(info: { name: string; version?: string } | undefined): string | undefined {
  return info && `${info.name}${info.version ? ` ${info.version}` : ''}`;
}

/** What the tools share across the sessions of one target. */
export interface DemoToolsContext {
  name: string;
  consents: ConsentBook;
  /** How long a tool waits for the consent page after the client's URL-mode `accept`. */
  consentTimeoutMs: number;
  /** Resources authorized on the consent page through `url_required`. */
  authorizedResources: Set<string>;
  /** The consent request `url_required` is waiting on, per resource. */
  pendingResources: Map<string, string>;
  /** Records a request id the client cancelled (for tests). */
  recordCancel(requestId: RequestId): void;
  /** A tool that asks the client first ends its call's POST stream (a target that polls: legacy-host.ts `polling`). */
  pollsWhileAsking?: boolean;
}

/** Per-session state the tools read. */
export interface SessionContext {
  /** Set when the transport closes, before the SDK aborts in-flight handlers (so those aborts are not "cancellations"). */
  closed: boolean;
  /** Level set by logging/setLevel; undefined = send everything. */
  logLevel?: LoggingLevel;
}

function text(t: string): CallToolResult {
  return { content: [{ type: 'text', text: t }] };
}

function errorText(t: string): CallToolResult {
  return { content: [{ type: 'text', text: t }], isError: true };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Resolves true after ms, or false as soon as signal aborts; never leaves a timer behind. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The tool result for a consent wait that did not end in "granted". */
export function consentRefused(
  what: string,
  outcome: Exclude<ConsentOutcome, 'granted'>,
  url: string,
  timeoutMs: number,
) {
  const reason = {
    denied: 'denied on the consent page',
    timeout: `not confirmed: the consent page ${url} was not completed within ${timeoutMs / 1000} s`,
    aborted: 'not confirmed: the call ended before the consent page was completed',
    unknown: 'not confirmed: the consent request is gone',
  }[outcome];
  return errorText(`${what} ${reason}`);
}

export function createDemoSessionServer(tools: DemoToolsContext, session: SessionContext): McpServer {
  const mcp = new McpServer(
    { name: tools.name, version: '1.0.0' },
    {
      capabilities: { tools: {}, prompts: {}, resources: {}, logging: {}, completions: {} },
      instructions:
        'Demo MCP target for the gateway: deterministic tools exercising elicitation, sampling, roots, progress and cancellation.',
    },
  );
  const server = mcp.server;

  /**
   * Options that make the SDK send a server-to-client request on the current tools/call POST stream.
   * A target that polls ends that stream first (the SDK keeps what follows for the client's reconnect).
   */
  const related = (extra: Extra) => {
    if (tools.pollsWhileAsking) extra.closeSSEStream?.();
    return { relatedRequestId: extra.requestId, signal: extra.signal, timeout: CLIENT_REQUEST_TIMEOUT_MS };
  };

  /** Records the request id if the client cancels it (not if the session merely closes). */
  const watchCancel = (extra: Extra): void => {
    extra.signal.addEventListener(
      'abort',
      () => {
        if (!session.closed) tools.recordCancel(extra.requestId);
      },
      { once: true },
    );
  };

  const elicitForm = (params: ElicitRequestFormParams, extra: Extra): Promise<ElicitResult> =>
    server.elicitInput(params, related(extra));

  /** Shared by use_aws and confirm_action: a boolean confirmation form. */
  const confirmTool = async (message: string, onAccept: string, extra: Extra): Promise<CallToolResult> => {
    let result: ElicitResult;
    try {
      result = await elicitForm(
        {
          mode: 'form',
          message,
          requestedSchema: {
            type: 'object',
            properties: { confirm: { type: 'boolean', title: 'Confirm', description: 'Proceed?' } },
            required: ['confirm'],
          },
        },
        extra,
      );
    } catch (err) {
      // The try/catch fallback AWS asks targets to implement when the client cannot elicit.
      return errorText(`elicitation unavailable: ${errorMessage(err)}`);
    }
    if (result.action === 'accept' && result.content?.confirm === true) return text(onAccept);
    return text(`not executed (${result.action === 'accept' ? 'confirm false' : result.action})`);
  };

  mcp.registerTool('echo', { description: 'Echoes the text back.', inputSchema: { text: z.string() } }, ({ text: t }) =>
    text(`echo: ${t}`),
  );

  mcp.registerTool(
    'use_aws',
    {
      description: 'Asks the user (form elicitation) before running an AWS CLI command.',
      inputSchema: { command: z.string() },
    },
    ({ command }, extra) => confirmTool(`Run \`${command}\`?`, `executed: ${command}`, extra),
  );

  mcp.registerTool(
    'confirm_action',
    { description: 'Asks the user (form elicitation) to confirm an action.', inputSchema: { action: z.string() } },
    ({ action }, extra) => confirmTool(`Confirm action: ${action}?`, `confirmed: ${action}`, extra),
  );

  mcp.registerTool(
    'access_github_repo',
    {
      description:
        "URL-mode elicitation (request based): asks the user to allow repository access on the target's consent page.",
      inputSchema: { repo: z.string() },
    },
    async ({ repo }, extra) => {
      const consent = tools.consents.open(`Authorize access to ${repo}`, {
        expiresInMs: tools.consentTimeoutMs,
        via: clientOf(server.getClientVersion()),
      });
      let result: ElicitResult;
      try {
        result = await server.elicitInput(
          { mode: 'url', elicitationId: consent.id, url: consent.url, message: consent.message },
          related(extra),
        );
      } catch (err) {
        tools.consents.discard(consent.id);
        return errorText(`elicitation unavailable: ${errorMessage(err)}`);
      }
      if (result.action !== 'accept') {
        tools.consents.discard(consent.id);
        return text(`access to ${repo} not granted (${result.action})`);
      }
      // `accept` only means the user agreed to open the page: the decision is made there.
      const outcome = await tools.consents.wait(consent.id, {
        timeoutMs: tools.consentTimeoutMs,
        signal: extra.signal,
      });
      if (outcome !== 'granted')
        return consentRefused(`access to ${repo}`, outcome, consent.url, tools.consentTimeoutMs);
      // notifications/elicitation/complete, related to this tools/call so it rides its POST stream.
      await server.createElicitationCompletionNotifier(consent.id, { relatedRequestId: extra.requestId })();
      return text(`accessed ${repo}`);
    },
  );

  mcp.registerTool(
    'url_required',
    {
      description:
        "URL-mode elicitation (exception based): fails with -32042 naming the target's consent page until the resource is allowed there.",
      inputSchema: { resource: z.string() },
    },
    ({ resource }) => {
      if (tools.authorizedResources.has(resource)) return text(`authorized ${resource}`);
      const waitingOn = tools.pendingResources.get(resource);
      const pending = waitingOn === undefined ? undefined : tools.consents.get(waitingOn);
      if (pending?.decision === 'denied') {
        tools.pendingResources.delete(resource);
        tools.consents.discard(pending.id);
        return errorText(`authorization for ${resource} was denied on the consent page`);
      }
      // Not decided yet: the same request again, so a page opened earlier still completes it.
      const consent =
        pending ??
        tools.consents.open(`Authorization required for ${resource}`, {
          via: clientOf(server.getClientVersion()),
          onDecided: (decision) => {
            if (decision !== 'granted') return;
            tools.authorizedResources.add(resource);
            tools.pendingResources.delete(resource);
            // Lets the client retry on its own; on the session's GET stream if it has one (MAY, best effort).
            void server
              .createElicitationCompletionNotifier(consent.id)()
              .catch(() => undefined);
          },
        });
      tools.pendingResources.set(resource, consent.id);
      // McpServer rethrows McpError code -32042 as a JSON-RPC error instead of wrapping it in an isError result.
      throw new UrlElicitationRequiredError([
        { mode: 'url', elicitationId: consent.id, url: consent.url, message: consent.message },
      ]);
    },
  );

  mcp.registerTool(
    'sample',
    { description: 'Asks the client to sample an LLM (sampling/createMessage).', inputSchema: { prompt: z.string() } },
    async ({ prompt }, extra) => {
      const result = await server.createMessage(
        { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 },
        related(extra),
      );
      const blocks = Array.isArray(result.content) ? result.content : [result.content];
      const body = blocks.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('');
      return text(`sampled: ${result.model}: ${body}`);
    },
  );

  mcp.registerTool('list_roots', { description: 'Lists the client roots (roots/list).' }, async (extra) => {
    const result = await server.listRoots(undefined, related(extra));
    return text(`roots: ${result.roots.map((r) => r.uri).join(',')}`);
  });

  mcp.registerTool(
    'progress',
    {
      description: 'Sends one progress notification (if a progressToken was given) and one log message per step.',
      inputSchema: { steps: z.number().int().min(1).max(20), delayMs: z.number().int().min(0).max(10_000).optional() },
    },
    async ({ steps, delayMs }, extra) => {
      watchCancel(extra);
      const progressToken = extra._meta?.progressToken;
      const sendLog =
        session.logLevel === undefined || LOG_LEVELS.indexOf('info') >= LOG_LEVELS.indexOf(session.logLevel);
      for (let i = 1; i <= steps; i++) {
        if (!(await sleep(delayMs ?? 10, extra.signal))) return text(`cancelled at step ${i}`);
        // extra.sendNotification relates to this request: the notifications ride the tools/call POST stream.
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: i, total: steps },
          });
        }
        if (sendLog) {
          await extra.sendNotification({
            method: 'notifications/message',
            params: { level: 'info', logger: tools.name, data: `step ${i}` },
          });
        }
      }
      return text(`done ${steps}`);
    },
  );

  mcp.registerTool(
    'slow',
    {
      description: 'Waits ms milliseconds (abortable by notifications/cancelled).',
      inputSchema: { ms: z.number().int().min(0).max(60_000) },
    },
    async ({ ms }, extra) => {
      watchCancel(extra);
      const completed = await sleep(ms, extra.signal);
      return text(completed ? `slept ${ms}` : `cancelled ${ms}`);
    },
  );

  mcp.registerTool(
    'multi_elicit',
    { description: 'Two sequential form elicitations (name, then age).' },
    async (extra) => {
      let name: string;
      try {
        const first = await elicitForm(
          {
            mode: 'form',
            message: 'What is your name?',
            requestedSchema: {
              type: 'object',
              properties: { name: { type: 'string', title: 'Name' } },
              required: ['name'],
            },
          },
          extra,
        );
        if (first.action !== 'accept') return text(`not completed (${first.action})`);
        name = String(first.content?.name);
        const second = await elicitForm(
          {
            mode: 'form',
            message: `How old are you, ${name}?`,
            requestedSchema: {
              type: 'object',
              properties: { age: { type: 'integer', title: 'Age', minimum: 0 } },
              required: ['age'],
            },
          },
          extra,
        );
        if (second.action !== 'accept') return text(`not completed (${second.action})`);
        return text(`hello ${name}, ${String(second.content?.age)}`);
      } catch (err) {
        return errorText(`elicitation unavailable: ${errorMessage(err)}`);
      }
    },
  );

  mcp.registerTool('fail', { description: 'Always fails (isError result).' }, () => errorText('failed on purpose'));

  // Ignores the client's declared capabilities on purpose (extra.sendRequest skips the SDK's checks):
  // it shows what a gateway does with a server request it did not declare to the target.
  mcp.registerTool(
    'request_anyway',
    {
      description: 'Sends a server-to-client request without checking capabilities (for gateway tests).',
      inputSchema: { kind: z.enum(['form', 'url', 'sampling', 'roots']) },
    },
    async ({ kind }, extra) => {
      try {
        if (kind === 'sampling') {
          const r = await extra.sendRequest(
            {
              method: 'sampling/createMessage',
              params: { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 },
            },
            CreateMessageResultSchema,
          );
          return text(`answered: ${r.model}`);
        }
        if (kind === 'roots') {
          const r = await extra.sendRequest({ method: 'roots/list' }, ListRootsResultSchema);
          return text(`answered: ${r.roots.length} roots`);
        }
        const consent = kind === 'url' ? tools.consents.open('Open this') : undefined;
        const params = consent
          ? { mode: 'url' as const, elicitationId: consent.id, url: consent.url, message: consent.message }
          : {
              mode: 'form' as const,
              message: 'Fill this',
              requestedSchema: { type: 'object' as const, properties: {} },
            };
        const r = await extra.sendRequest({ method: 'elicitation/create', params }, ElicitResultSchema);
        return text(`answered: ${r.action}`);
      } catch (err) {
        return errorText(`refused: ${errorMessage(err)}`);
      }
    },
  );

  mcp.registerPrompt('greeting', { description: 'Greets someone.', argsSchema: { name: z.string() } }, ({ name }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }],
  }));

  mcp.registerResource(
    'readme',
    'demo://readme',
    { mimeType: 'text/plain', description: 'About this target.' },
    (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'demo target readme' }],
    }),
  );

  mcp.registerResource(
    'item',
    new ResourceTemplate('demo://items/{id}', {
      list: undefined,
      complete: { id: (value) => ['1', '2', '3'].filter((id) => id.startsWith(value)) },
    }),
    { mimeType: 'text/plain', description: 'An item by id.' },
    (uri, variables) => {
      const id = Array.isArray(variables.id) ? variables.id.join(',') : variables.id;
      return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${id}` }] };
    },
  );

  return mcp;
}
