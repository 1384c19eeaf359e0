import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayKind } from './gateways';
import { type InstanceRouter, startInstanceRouter } from './instance-router';
import { itNeeding, pythonClients } from './prerequisites';
import { startPollingServer } from './servers/v1-polling-server';
import { startV2ModernServer } from './servers/v2-modern-server';
import { recipesPython } from './setup/python-environment';
import { thinksThenConfirms } from './thinking-user';
import { withGateway } from './with-gateway';

/**
 * Release while waiting (MCP 2025-11-25 SSE polling): a call of a 2025-11-25 session that waits for
 * the user ends its client stream with a `retry` once `streamReleaseAfterSeconds` passed, so no
 * invocation holds the think time; the official clients reconnect (GET + `Last-Event-ID`) and the
 * reconnect, on another instance, goes on with the call. Two gateway instances behind a router that
 * sends the client's answers and reconnects to the second one.
 *
 * One suite per kind of gateway, each in a test file of its own (so the two run side by side):
 * - the Lambda runtime: the think time is twice the function timeout, the point being that no
 *   invocation lasts it (RELEASE_THINK_SECONDS / RELEASE_FUNCTION_TIMEOUT_SECONDS run it at 60 s / 30 s);
 * - the local server has no function timeout: a think time past the release is enough.
 * When exactly a call is released and taken over is pinned on a fake clock
 * (test/in-process/waiting-on-a-fake-clock.test.ts); these prove the real clients and processes do it.
 */

const FUNCTION_TIMEOUT_MS = Number(process.env.RELEASE_FUNCTION_TIMEOUT_SECONDS ?? 6) * 1000;
const RELEASE_AFTER_SECONDS = 1;
const LAMBDA_THINK_MS = Number(process.env.RELEASE_THINK_SECONDS ?? 12) * 1000;
/** Past the release (1 s), with room for the reconnect's retry (300 ms) on a loaded machine. */
const LOCAL_THINK_MS = 3000;

const LEASE_MS = 2000;

const ROOT = join(__dirname, '../..');
const python = recipesPython();
const run = promisify(execFile);

/** An official TypeScript SDK (v1) client whose user answers every form elicitation after `thinkMs`. */
async function thinkingClient(url: string, thinkMs: number, onAsked: () => void = () => undefined) {
  const client = new Client(
    { name: 'thinking-user', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler(
    ElicitRequestSchema,
    thinksThenConfirms(() => thinkMs, onAsked),
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function callAndRead(client: Client, tool: string, thinkMs: number): Promise<string> {
  const result = await client.callTool({ name: tool, arguments: { env: 'prod' } }, undefined, {
    timeout: thinkMs * 4 + 30_000,
  });
  return (result.content as Array<{ text: string }>)[0]!.text;
}

export function describeReleaseWhileWaiting(kind: GatewayKind): void {
  const thinkMs = kind === 'lambda runtime' ? LAMBDA_THINK_MS : LOCAL_THINK_MS;
  jest.setTimeout(thinkMs * 5 + 30_000);
  describe(`a call that waits for the user, through the ${kind}`, () => suite(kind, thinkMs));
}

function suite(kind: GatewayKind, thinkMs: number): void {
  const gw = withGateway(
    (t) => ({
      logLevel: (process.env.RELEASE_LOG_LEVEL ?? 'SILENT') as 'SILENT',
      // Every client released (the official clients resume; release-policy-sdk-clients.test.ts is the default).
      streamRelease: 'always',
      targets: [
        { name: 'poll', url: t.poll.url },
        { name: 'plain', url: t.plain.url },
        { name: 'modern', url: t.modern.url },
      ],
      streamReleaseAfterSeconds: RELEASE_AFTER_SECONDS,
      streamReleaseRetryMs: 300,
      pendingRequestTimeoutSeconds: 300,
    }),
    {
      kind,
      instances: 2,
      timeoutMs: kind === 'lambda runtime' ? FUNCTION_TIMEOUT_MS : undefined,
      // A killed holder is noticed within this lease (the Lambda kinds read it from the environment).
      environment: { GATEWAY_HOLDER_LEASE_MS: String(LEASE_MS) },
      targets: {
        poll: () => startPollingServer(),
        plain: () => startPollingServer({ eventStore: false }),
        modern: () => startV2ModernServer(),
      },
    },
  );
  let router: InstanceRouter;
  beforeAll(async () => {
    router = await startInstanceRouter(gw.instances[0]!.url, gw.instances[1]!.url);
  });
  afterAll(() => router.close());

  const longestInvocationMs = () => Math.max(0, ...gw.instances.map((i) => i.stats?.().longestInvocationMs ?? 0));
  const reconnects = (from: number) => router.log.slice(from).filter((r) => r.lastEventId !== undefined);

  // One call at a time: two at once, each cold-starting an environment on a loaded machine, left one
  // call too little of its 6 s function timeout to be released before the deadline.
  it.each([
    ['a 2026-07-28 target', 'modern___deploy'],
    ['a 2025 target whose stream can be resumed (official SDK with an event store)', 'poll___deploy'],
  ])(
    '%s: the TypeScript SDK client answers after the think time; the call completes and no invocation held the wait',
    async (_, tool) => {
      const from = router.log.length;
      const client = await thinkingClient(router.url, thinkMs);
      try {
        await expect(callAndRead(client, tool, thinkMs)).resolves.toBe('deployed to prod');
      } finally {
        await client.close();
      }
      // The client reconnected to the other instance, which went on with the call.
      expect(reconnects(from).length).toBeGreaterThan(0);
      expect(reconnects(from).every((r) => r.to === 'second')).toBe(true);
      if (kind === 'lambda runtime') expect(longestInvocationMs()).toBeLessThan(thinkMs);
    },
  );

  it('a 2025 target whose stream cannot be resumed: the call is held, as before, and completes', async () => {
    const from = router.log.length;
    const client = await thinkingClient(router.url, Math.min(2000, FUNCTION_TIMEOUT_MS / 2));
    try {
      await expect(callAndRead(client, 'plain___deploy', 2000)).resolves.toBe('deployed to prod');
    } finally {
      await client.close();
    }
    expect(reconnects(from)).toEqual([]);
  });

  itNeeding(pythonClients)(
    'the Python SDK client answers after the think time (2026-07-28 and resumable 2025 targets): both complete',
    async () => {
      const from = router.log.length;
      // One call at a time, as above: two at once, each cold-starting an environment, left one of them too
      // little of its function timeout to be released before the deadline when the suite loaded the machine.
      const outputs: Array<{ stdout: string }> = [];
      for (const tool of ['modern___deploy', 'poll___deploy']) {
        outputs.push(
          await run(
            python,
            [
              join(ROOT, 'test/support/clients/python_calls_think.py'),
              router.url,
              'python-thinking-user',
              String(thinkMs / 1000),
              tool,
              JSON.stringify({ env: 'prod' }),
            ],
            {
              timeout: thinkMs * 4 + 30_000,
            },
          ),
        );
      }
      expect(outputs.map((o) => o.stdout.trim())).toEqual(['deployed to prod', 'deployed to prod']);
      expect(reconnects(from).length).toBeGreaterThanOrEqual(2);
      if (kind === 'lambda runtime') expect(longestInvocationMs()).toBeLessThan(thinkMs);
    },
  );

  if (kind === 'lambda runtime') {
    it('a 2025 target working longer than the function timeout: the call is released before the deadline and completes', async () => {
      const from = router.log.length;
      const timeoutsBefore = gw.instances.map((i) => i.stats?.().timeouts);
      const client = await thinkingClient(router.url, 0);
      try {
        const result = await client.callTool(
          { name: 'poll___slow_deploy', arguments: { env: 'prod', ms: FUNCTION_TIMEOUT_MS * 2 } },
          undefined,
          { timeout: FUNCTION_TIMEOUT_MS * 8 },
        );
        expect((result.content as Array<{ text: string }>)[0]!.text).toBe(
          `deployed to prod after ${FUNCTION_TIMEOUT_MS * 2} ms`,
        );
      } finally {
        await client.close();
      }
      expect(reconnects(from).length).toBeGreaterThan(0);
      expect(gw.instances.map((i) => i.stats?.().timeouts)).toEqual(timeoutsBefore);
    });

    it.each([
      ['a 2026-07-28 target', 'modern___deploy'],
      ['a 2025 target whose stream can be resumed', 'poll___deploy'],
    ])(
      '%s: the instance holding the call is killed after the elicitation was sent; the reconnect gets the result',
      async (_, tool) => {
        const from = router.log.length;
        const first = gw.instances[0]!;
        let killed: number | undefined;
        const client = await thinkingClient(router.url, LEASE_MS * 2, () => {
          const busy = first.stats?.().detail.find((environment) => environment.state === 'busy');
          killed = busy?.pid;
          if (killed !== undefined) process.kill(killed, 'SIGKILL');
        });
        try {
          await expect(callAndRead(client, tool, LEASE_MS * 2)).resolves.toBe('deployed to prod');
        } finally {
          await client.close();
        }
        expect(killed).toBeDefined();
        expect(reconnects(from).length).toBeGreaterThan(0);
      },
    );
  }
}
