import { randomBytes } from 'node:crypto';
import { createServer, type Server as HttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  acceptedContent,
  type CallToolResult,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  type McpHttpHandler,
  McpServer,
} from '@modelcontextprotocol/server';
import { z } from 'zod';

/**
 * A 2026-07-28 ("modern") MCP target built with the official v2 SDK (`createMcpHandler`), served on
 * node:http at 127.0.0.1. Its tools are written once in `inputRequired(...)` style: they ask for input
 * with an input_required result and a requestState minted by the SDK's HMAC codec, and finish when
 * the client retries with `inputResponses`. For tests and local runs of the gateway's stateless path.
 *
 * - `legacy: 'reject'` (default): modern-only, as a target that never implemented 2025 would be.
 * - `legacy: 'stateless'`: dual-era; 2025 clients are served per request (and cannot be elicited).
 *
 * @example
 * const target = await startModernDemoTarget();
 * // configure the gateway with { name: 'modern', url: target.url }
 * await target.close();
 */

export interface ModernDemoTargetOptions {
  legacy?: 'reject' | 'stateless';
  /** serverInfo.name; default 'modern-demo-target'. */
  name?: string;
  /** HMAC key of the target's own requestState codec; default random. */
  stateKey?: string;
}

export interface ModernDemoCall {
  tool: string;
  /** The requestState the target received (after the gateway unwrapped its own). */
  requestState?: string;
  inputResponseKeys: string[];
  /** The Mcp-Name header as received. */
  mcpName?: string;
  /** The capabilities the request declared in _meta. */
  clientCapabilities?: unknown;
  clientInfo?: unknown;
}

export interface ModernDemoStats {
  requestsByMethod: Record<string, number>;
  calls: ModernDemoCall[];
  /** requestStates the target minted, in order. */
  minted: string[];
}

export interface ModernDemoTarget {
  url: string;
  close(): Promise<void>;
  stats(): ModernDemoStats;
}

const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });

interface StatePayload {
  tool: string;
  step: string;
  name?: string;
}

export async function startModernDemoTarget(options: ModernDemoTargetOptions = {}): Promise<ModernDemoTarget> {
  const codec = createRequestStateCodec<StatePayload>({
    key: options.stateKey ?? randomBytes(32).toString('base64'),
    ttlSeconds: 600,
  });
  const stats: ModernDemoStats = { requestsByMethod: {}, calls: [], minted: [] };
  const mint = async (payload: StatePayload) => {
    const state = await codec.mint(payload);
    stats.minted.push(state);
    return state;
  };

  const factory = () => {
    const server = new McpServer(
      { name: options.name ?? 'modern-demo-target', version: '2.0.0' },
      { capabilities: { tools: {}, prompts: {}, resources: {} }, requestState: { verify: codec.verify } },
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
        description: 'URL-mode elicitation: asks the user to authorize repository access out of band.',
        inputSchema: z.object({ repo: z.string() }),
      },
      async ({ repo }, ctx) => {
        const answer = inputResponse(ctx.mcpReq.inputResponses, 'authorize');
        if (answer.kind === 'elicit' && ctx.mcpReq.requestState<StatePayload>()?.step === 'authorize') {
          return answer.action === 'accept'
            ? text(`accessed ${repo}`)
            : text(`access to ${repo} not granted (${answer.action})`);
        }
        return inputRequired({
          inputRequests: {
            authorize: inputRequired.elicitUrl({
              message: `Authorize access to ${repo}`,
              url: `https://github.example/login/oauth/authorize?repo=${encodeURIComponent(repo)}`,
            }),
          },
          requestState: await mint({ tool: 'access_github_repo', step: 'authorize' }),
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

    server.registerTool('fail', { description: 'Always fails (isError result).' }, () => ({
      content: [{ type: 'text', text: 'failed on purpose' }],
      isError: true,
    }));

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
  };

  const handler: McpHttpHandler = createMcpHandler(factory, {
    legacy: options.legacy ?? 'reject',
    onerror: () => undefined,
  });

  const httpServer: HttpServer = createServer((req, res) => {
    void serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    record(req, body);
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers))
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    const request = new Request(`http://${req.headers.host}${req.url}`, {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
      signal: abort.signal,
    });
    const response = await handler.fetch(request);
    const out: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      out[name] = value;
    });
    res.writeHead(response.status, out);
    if (!response.body) return void res.end();
    const reader = response.body.getReader();
    abort.signal.addEventListener('abort', () => void reader.cancel().catch(() => undefined), { once: true });
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      res.write(value);
    }
    res.end();
  }

  function record(req: IncomingMessage, body: Buffer): void {
    let message: { method?: string; params?: Record<string, unknown> } | undefined;
    try {
      message = JSON.parse(body.toString('utf8'));
    } catch {
      return;
    }
    if (!message?.method) return;
    stats.requestsByMethod[message.method] = (stats.requestsByMethod[message.method] ?? 0) + 1;
    if (message.method !== 'tools/call') return;
    const params = message.params ?? {};
    const meta = (params._meta ?? {}) as Record<string, unknown>;
    stats.calls.push({
      tool: String(params.name),
      requestState: typeof params.requestState === 'string' ? params.requestState : undefined,
      inputResponseKeys: Object.keys((params.inputResponses as object | undefined) ?? {}),
      mcpName: req.headers['mcp-name'] as string | undefined,
      clientCapabilities: meta['io.modelcontextprotocol/clientCapabilities'],
      clientInfo: meta['io.modelcontextprotocol/clientInfo'],
    });
  }

  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    stats: () => ({
      requestsByMethod: { ...stats.requestsByMethod },
      calls: stats.calls.map((c) => ({ ...c })),
      minted: [...stats.minted],
    }),
    close: async () => {
      await handler.close().catch(() => undefined);
      await new Promise<void>((resolve) => {
        httpServer.close(() => resolve());
        httpServer.closeAllConnections();
      });
    },
  };
}
