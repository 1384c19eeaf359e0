import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * The official SDK clients the benchmark measures with: v1 (`@modelcontextprotocol/sdk`) for the
 * 2025-11-25 rows, v2 (`@modelcontextprotocol/client`) pinned to 2026-07-28 for the stateless rows.
 * Every elicitation is accepted with `{ confirm: true }`. With `answerUrl`, the client's answers to
 * server requests (POSTed JSON-RPC responses) go to that URL instead: another gateway instance, as a
 * load balancer or Lambda may route them.
 */
export interface BenchClient {
  /** Calls a tool and returns the text of its first content block. */
  call(name: string, args: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

const INFO = { name: 'bench', version: '1.0.0' };
const ACCEPT = { action: 'accept' as const, content: { confirm: true } };

/** Answers (JSON-RPC responses) to `answerUrl`, everything else where the transport sends it. */
function routedFetch(answerUrl: string | undefined): FetchLike {
  return (url, init) => {
    if (answerUrl && init?.method === 'POST' && typeof init.body === 'string') {
      const message = JSON.parse(init.body) as Record<string, unknown>;
      if (!('method' in message) && ('result' in message || 'error' in message)) return fetch(answerUrl, init);
    }
    return fetch(url, init);
  };
}

function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ text?: string }> }).content;
  return content?.[0]?.text ?? JSON.stringify(result);
}

export async function legacyClient(
  url: string,
  options: { elicitation?: boolean; answerUrl?: string } = {},
): Promise<BenchClient> {
  const elicitation = options.elicitation ?? true;
  const client = new V1Client(INFO, { capabilities: elicitation ? { elicitation: { form: {} } } : {} });
  if (elicitation) client.setRequestHandler(ElicitRequestSchema, () => ACCEPT);
  await client.connect(new V1Transport(new URL(url), { fetch: routedFetch(options.answerUrl) }));
  return {
    call: async (name, args) =>
      textOf(await client.callTool({ name, arguments: args }, CallToolResultSchema, { timeout: 60_000 })),
    close: () => client.close(),
  };
}

export async function modernClient(url: string): Promise<BenchClient> {
  const client = new V2Client(INFO, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  });
  client.setRequestHandler('elicitation/create', () => ACCEPT);
  await client.connect(new V2Transport(new URL(url)));
  return {
    call: async (name, args) => textOf(await client.callTool({ name, arguments: args }, { timeout: 60_000 })),
    close: () => client.close(),
  };
}
