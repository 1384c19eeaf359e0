import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { type InstanceRouter, startInstanceRouter } from '../support/instance-router';
import { describeNeeding, pythonClients } from '../support/prerequisites';
import { recipesPython } from '../support/setup/python-environment';
import { thinksThenConfirms } from '../support/thinking-user';
import { withGateway } from '../support/with-gateway';

/**
 * The release policy with the official SDK clients, which resume a POST stream the server ended
 * (TypeScript SDK v1 and v2, Python SDK 2.x), in 2025-11-25 sessions, through two gateway
 * instances of the Lambda runtime (function timeout 12 s; the answers and every reconnect go to the
 * second, test/support/instance-router.ts). The call waits for the user on a 2026-07-28-only target
 * (nothing open upstream: it can be released). In the default configuration (`streamRelease:
 * "proven"`):
 * - a client not yet seen resuming is held until just before the function timeout, then released;
 *   an answer 16 s on still reaches it (it reconnects, and the call goes on on the other instance);
 * - from then on it is proven: its next calls, in that session and in its later sessions (same
 *   principal and clientInfo), are released after `streamReleaseAfterSeconds`;
 * - a client on `streamReleaseClients` is released early from its first call.
 * A call held for its whole wait needs no reconnect; a released one needs at least one: the tests
 * count the reconnects (`GET` + `Last-Event-ID`) per client.
 */

const ROOT = join(__dirname, '../..');
const python = recipesPython();
const pythonScript = join(ROOT, 'test/support/clients/python_calls_think.py');
const describeWithPython = describeNeeding(pythonClients);

const FUNCTION_TIMEOUT_MS = 12_000;
const LONG_THINK_S = 16; // past the function timeout
const RELEASE_AFTER_SECONDS = 0.5;
/**
 * Past streamReleaseAfterSeconds, well within the function timeout: a held call's answer comes long
 * before its release at the deadline, on a loaded machine too (a cold start and a slow relay first).
 */
const SHORT_THINK_S = 2.5;
/**
 * A call held until just before the deadline is released 2.5 s before the function timeout (the
 * handler's 1 s margin, then 1.5 s): nothing reconnects before this, well past streamReleaseAfterSeconds.
 */
const HELD_AT_LEAST_MS = FUNCTION_TIMEOUT_MS / 2;

/** A client that answers the k-th elicitation of its session after `thinks[k]` seconds. */
interface ThinkingClient {
  call(n: number): Promise<string>;
  close(): Promise<void>;
}

const textOf = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0]!.text;
/** The k-th elicitation's think time, in milliseconds (none left: at once). */
const nextThink = (thinks: number[]) => () => (thinks.shift() ?? 0) * 1000;
const CALL_TIMEOUT_MS = 120_000;

async function v1Client(url: string, name: string, thinks: number[]): Promise<ThinkingClient> {
  const client = new V1Client({ name, version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, thinksThenConfirms(nextThink(thinks)));
  await client.connect(new V1Transport(new URL(url)));
  return {
    call: async (n) => {
      const result = await client.callTool(
        { name: 'use_aws', arguments: { command: `call ${n}` } },
        CallToolResultSchema,
        { timeout: CALL_TIMEOUT_MS },
      );
      return textOf(result);
    },
    close: () => client.close(),
  };
}

async function v2Client(url: string, name: string, thinks: number[]): Promise<ThinkingClient> {
  const client = new V2Client(
    { name, version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'legacy' } },
  );
  client.setRequestHandler('elicitation/create', thinksThenConfirms(nextThink(thinks)));
  await client.connect(new V2Transport(new URL(url)));
  return {
    call: async (n) => {
      const result = await client.callTool(
        { name: 'use_aws', arguments: { command: `call ${n}` } },
        { timeout: CALL_TIMEOUT_MS },
      );
      return (result.content[0] as { text: string }).text;
    },
    close: () => client.close(),
  };
}

/** The Python SDK: one process, one session, one call per think time. */
async function pythonCalls(url: string, name: string, thinks: number[]): Promise<string[]> {
  const { stdout } = await promisify(execFile)(python, [pythonScript, url, name, thinks.join(',')], {
    timeout: CALL_TIMEOUT_MS,
  });
  return stdout.trim().split('\n');
}

/** The reconnects (GET + Last-Event-ID) a client's router saw since `from`, with when they came. */
const resumesSince = (router: InstanceRouter, from: number) =>
  router.log.slice(from).filter((request) => request.method === 'GET' && request.lastEventId !== undefined);

describeWithPython('the release policy with the official SDK clients (lambda runtime, 12 s timeout)', () => {
  const gw = withGateway(
    { logLevel: 'SILENT', toolNamePrefix: 'conditional', streamReleaseAfterSeconds: RELEASE_AFTER_SECONDS },
    {
      kind: 'lambda runtime',
      timeoutMs: FUNCTION_TIMEOUT_MS,
      instances: 2,
      targets: { only: () => startModernDemoTarget() },
    },
  );
  const routers: InstanceRouter[] = [];
  const route = async () => {
    const router = await startInstanceRouter(gw.instances[0]!.url, gw.instances[1]!.url);
    routers.push(router);
    return router;
  };
  afterAll(async () => {
    await Promise.all(routers.map((router) => router.close()));
  });

  it('held until just before the deadline, then released: a 16 s answer reaches each; then proven, each is released early, in its session and in the next', async () => {
    const tsClients = { 'TypeScript SDK v1': v1Client, 'TypeScript SDK v2': v2Client };
    const runs = [
      ...Object.entries(tsClients).map(async ([label, connect]) => {
        const router = await route();
        const name = `${label} app`;
        const client = await connect(router.url, name, [LONG_THINK_S, SHORT_THINK_S]);
        const started = Date.now();
        const first = await client.call(1);
        const firstResumes = resumesSince(router, 0);
        const mark = router.log.length;
        const second = await client.call(2);
        const secondResumes = resumesSince(router, mark);
        await client.close();
        // A later session of the same client (same principal and clientInfo): proven from its first call.
        const again = await connect(router.url, name, [SHORT_THINK_S]);
        const mark2 = router.log.length;
        const third = await again.call(3);
        const thirdResumes = resumesSince(router, mark2);
        await again.close();
        return { label, results: [first, second, third], started, firstResumes, secondResumes, thirdResumes };
      }),
      (async () => {
        const router = await route();
        const started = Date.now();
        const [first] = await pythonCalls(router.url, 'python app', [LONG_THINK_S]);
        const firstResumes = resumesSince(router, 0);
        const mark = router.log.length;
        const [second, third] = await pythonCalls(router.url, 'python app', [SHORT_THINK_S, SHORT_THINK_S]);
        const laterResumes = resumesSince(router, mark);
        return {
          label: 'Python SDK',
          results: [first, second?.replace('call 1', 'call 2'), third?.replace('call 2', 'call 3')],
          started,
          firstResumes,
          secondResumes: laterResumes,
          thirdResumes: laterResumes,
        };
      })(),
    ];
    // A client never seen resuming, answering within the timeout: held, never reconnecting.
    const control = (async () => {
      const router = await route();
      const client = await v1Client(router.url, 'unproven app', [SHORT_THINK_S]);
      const result = await client.call(1);
      await client.close();
      return { result, resumes: resumesSince(router, 0) };
    })();

    for (const run of await Promise.all(runs)) {
      expect({ client: run.label, results: run.results }).toEqual({
        client: run.label,
        results: ['executed: call 1', 'executed: call 2', 'executed: call 3'],
      });
      // Call 1: released only near the deadline (nothing reconnected in its first 6 s), then resumed.
      expect(run.firstResumes.length).toBeGreaterThanOrEqual(1);
      expect({
        client: run.label,
        firstResumeAfterMs: run.firstResumes[0]!.at - run.started >= HELD_AT_LEAST_MS,
      }).toEqual({
        client: run.label,
        firstResumeAfterMs: true,
      });
      // Calls 2 and 3 (proven): released after streamReleaseAfterSeconds, well before their answers.
      expect({ client: run.label, second: run.secondResumes.length >= 1, third: run.thirdResumes.length >= 1 }).toEqual(
        { client: run.label, second: true, third: true },
      );
    }
    const held = await control;
    expect(held.result).toBe('executed: call 1');
    expect(held.resumes).toEqual([]);
  }, 120_000);
});

describeWithPython('a client on streamReleaseClients', () => {
  const gw = withGateway(
    {
      logLevel: 'SILENT',
      toolNamePrefix: 'conditional',
      streamReleaseAfterSeconds: RELEASE_AFTER_SECONDS,
      streamReleaseClients: [{ name: 'trusted app', version: '>=1.0' }],
    },
    { instances: 2, targets: { only: () => startModernDemoTarget() } },
  );

  it('is released early from its first call (and one below the version is not)', async () => {
    const routers = await Promise.all(
      [0, 1].map(() => startInstanceRouter(gw.instances[0]!.url, gw.instances[1]!.url)),
    );
    try {
      const trusted = await v1Client(routers[0]!.url, 'trusted app', [SHORT_THINK_S]);
      const trustedOld = await (async () => {
        const client = new V1Client(
          { name: 'trusted app', version: '0.9.0' },
          { capabilities: { elicitation: { form: {} } } },
        );
        client.setRequestHandler(ElicitRequestSchema, thinksThenConfirms(nextThink([SHORT_THINK_S])));
        await client.connect(new V1Transport(new URL(routers[1]!.url)));
        return client;
      })();
      const [a, b] = await Promise.all([
        trusted.call(1),
        trustedOld.callTool({ name: 'use_aws', arguments: { command: 'call 1' } }, CallToolResultSchema, {
          timeout: CALL_TIMEOUT_MS,
        }),
      ]);
      expect(a).toBe('executed: call 1');
      expect(textOf(b)).toBe('executed: call 1');
      expect(resumesSince(routers[0]!, 0).length).toBeGreaterThanOrEqual(1);
      expect(resumesSince(routers[1]!, 0)).toEqual([]);
      await Promise.all([trusted.close(), trustedOld.close()]);
    } finally {
      await Promise.all(routers.map((router) => router.close()));
    }
  }, 60_000);
});
