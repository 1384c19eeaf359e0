import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { LocalGateway } from '../../dev/local-gateway';
import { AUDIENCE, CLIENT, startIssuer, type TestIssuer } from '../auth/support';
import { startGateway } from '../modern/helpers';
import { FINANCE_POLICIES } from '../support/finance-policies';
import { serveFetch } from '../support/servers/serve-fetch';

/**
 * Who may call what, end to end: a gateway with JWT auth and the finance policies, a payments target
 * written with the official v2 SDK (both eras), and official SDK clients of both eras signed in as two
 * users. The finance group sees and calls `payments___refund` up to its limit; anyone else neither sees
 * nor calls it; a refused call never reaches the target; and the client is told which tool, not which policy.
 */

jest.setTimeout(30_000);

let issuer: TestIssuer;
let target: { url: string; close(): Promise<void> };
let gateway: LocalGateway;
/** The calls the payments target ran, as `tool amount`. */
const ran: string[] = [];

function paymentsServer(): McpServer {
  const server = new McpServer({ name: 'payments', version: '1.0.0' });
  server.registerTool(
    'refund',
    {
      description: 'Refunds an amount.',
      inputSchema: z.object({ amount: z.number().int() }),
      annotations: { destructiveHint: true },
    },
    async ({ amount }) => {
      ran.push(`refund ${amount}`);
      return { content: [{ type: 'text', text: `refunded ${amount}` }] };
    },
  );
  server.registerTool('balance', { description: 'The balance.', annotations: { readOnlyHint: true } }, async () => {
    ran.push('balance');
    return { content: [{ type: 'text', text: 'balance 42' }] };
  });
  return server;
}

beforeAll(async () => {
  issuer = await startIssuer();
  const handler = createMcpHandler(() => paymentsServer(), { onerror: () => undefined });
  const served = await serveFetch((request) => handler.fetch(request));
  target = {
    url: served.url,
    close: async () => {
      await handler.close().catch(() => undefined);
      await served.close();
    },
  };
  gateway = await startGateway(
    {
      targets: [{ name: 'payments', url: target.url }],
      auth: { type: 'jwt', discoveryUrl: issuer.discoveryUrl, allowedAudiences: [AUDIENCE], allowedClients: [CLIENT] },
      policy: { policies: FINANCE_POLICIES, argumentTypes: { amount: 'Long' } },
    },
    { dynamodbEndpoint: 'embedded' },
  );
});
afterAll(async () => {
  await gateway?.close();
  await target?.close();
  await issuer?.close();
});

interface SignedIn {
  tools(): Promise<string[]>;
  call(name: string, args: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

async function signIn(era: '2025-11-25' | '2026-07-28', sub: string, groups: string[]): Promise<SignedIn> {
  const token = await issuer.sign({ sub, groups });
  const requestInit = { headers: { authorization: `Bearer ${token}` } };
  const info = { name: `policy-${sub}`, version: '1.0.0' };
  const failure = (error: unknown) => `error: ${(error as Error).message}`;
  if (era === '2025-11-25') {
    const client = new V1Client(info);
    await client.connect(new V1Transport(new URL(gateway.url), { requestInit }));
    return {
      tools: async () => (await client.listTools()).tools.map((t) => t.name),
      call: (name, args) =>
        client
          .callTool({ name, arguments: args }, CallToolResultSchema)
          .then((r) => (r.content as Array<{ text: string }>)[0]!.text, failure),
      close: () => client.close(),
    };
  }
  const client = new V2Client(info, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new V2Transport(new URL(gateway.url), { requestInit }));
  return {
    tools: async () => (await client.listTools()).tools.map((t) => t.name),
    call: (name, args) =>
      client.callTool({ name, arguments: args }).then((r) => (r.content as Array<{ text: string }>)[0]!.text, failure),
    close: () => client.close(),
  };
}

describe.each(['2025-11-25', '2026-07-28'] as const)('%s clients', (era) => {
  it('the finance group sees refund and calls it within its limit; above it the call is refused before the target', async () => {
    const alice = await signIn(era, 'alice', ['finance']);
    try {
      expect((await alice.tools()).sort()).toEqual(['payments___balance', 'payments___refund']);
      ran.length = 0;
      expect(await alice.call('payments___refund', { amount: 120 })).toBe('refunded 120');
      const refused = await alice.call('payments___refund', { amount: 900 });
      expect(refused).toMatch(/Access denied: you may not call tool "payments___refund"/);
      expect(refused).not.toMatch(/finance-refunds|policy/i);
      expect(ran).toEqual(['refund 120']);
    } finally {
      await alice.close();
    }
  });

  it('anyone else sees only what is read-only, and a call to refund is refused without reaching the target', async () => {
    const bob = await signIn(era, 'bob', ['engineering']);
    try {
      expect(await bob.tools()).toEqual(['payments___balance']);
      ran.length = 0;
      expect(await bob.call('payments___balance', {})).toBe('balance 42');
      expect(await bob.call('payments___refund', { amount: 1 })).toMatch(/Access denied/);
      expect(ran).toEqual(['balance']);
    } finally {
      await bob.close();
    }
  });
});
