import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startWebFunctionMode, type WebFunctionMode } from '../../dev/web-function-mode';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { connectClient } from '../eras/clients';
import { type DynamoProcess, startDynamoProcess } from '../support/gateway-process';
import {
  callAndAnswer,
  eventually,
  initSession,
  initSessionRetrying,
  type Json,
  post,
  postRetrying,
  sessionItems,
  sseEvents,
} from '../support/mcp-http';

/**
 * The Web Function form: the bundle `npm run build` writes to dist/web-function/ (what the stack deploys
 * with `deploymentForm: webFunction`) in the local Web Function emulator, on the runtime's Node.js 24.
 * One environment serves many requests at once, so a held elicitation costs a share of an environment;
 * pending records, leases and event logs still work across environments, as across Lambda instances;
 * scale-in's SIGTERM leaves every waiting call recoverable where it can be.
 */

// 64 sessions and calls in one environment: beside a second copy of the suite they took over 120 s.
jest.setTimeout(300_000);

const ALL = { elicitation: { form: {} } };
const accept = () => ({ result: { action: 'accept', content: { confirm: true } } });

// dynalite in a process of its own, as DynamoDB is: on this test's event loop it would share a core with
// the 64 streams' parsing, and under load fall behind the holders' reads and lease renewals.
let dynamo: DynamoProcess;
let legacy: Awaited<ReturnType<typeof startDemoTarget>>;
let modern: Awaited<ReturnType<typeof startModernDemoTarget>>;
beforeAll(async () => {
  dynamo = await startDynamoProcess();
  legacy = await startDemoTarget();
  modern = await startModernDemoTarget();
});
afterAll(async () => {
  await modern?.close();
  await legacy?.close();
  await dynamo?.close();
});

/** The environments' last output lines (a crash's stack, the runtime's own lines). */
const environmentLines: string[] = [];
/** What the environments went through, for a failure's message. */
const environmentsReport = (gateway: WebFunctionMode) =>
  `environments ${JSON.stringify(gateway.stats())}; their last lines:\n${environmentLines.slice(-20).join('\n')}`;

async function start(options: Parameters<typeof startWebFunctionMode>[0] = {}): Promise<WebFunctionMode> {
  return startWebFunctionMode({
    port: 0,
    demo: false,
    dynamodbEndpoint: dynamo.endpoint,
    config: {
      // WEB_FUNCTION_LOG=1 WEB_FUNCTION_LOG_LEVEL=DEBUG shows what the environments did.
      logLevel: (process.env.WEB_FUNCTION_LOG_LEVEL ?? 'SILENT') as 'SILENT',
      targets: [
        { name: 'legacy', url: legacy.url },
        { name: 'modern', url: modern.url },
      ],
    },
    log: (line) => {
      if (process.env.WEB_FUNCTION_LOG) console.error(line);
      environmentLines.push(line); // the last ones go with a failure's message
      if (environmentLines.length > 50) environmentLines.shift();
    },
    ...options,
  });
}

describe('one environment, many waiting calls', () => {
  let gateway: WebFunctionMode;
  beforeAll(async () => {
    gateway = await start();
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('64 held 2025 elicitations wait in one environment; each answer reaches its own call and each result its own client', async () => {
    // 64 initializes at once on one dynalite: a client honours a retryable 503 (the store's bound).
    const sessions = await Promise.all(
      Array.from({ length: 64 }, () => initSessionRetrying(gateway.url, { capabilities: ALL })),
    );
    const questions: Array<Promise<Json>> = [];
    const streams = sessions.map(({ headers }, i) => {
      let asked!: (question: Json) => void;
      let unasked!: (error: Error) => void;
      questions.push(
        new Promise((resolve, reject) => {
          asked = resolve;
          unasked = reject;
        }),
      );
      return (async () => {
        // The call, too, may meet the store's bound under load: a 503 before its stream started nothing.
        const res = await postRetrying(gateway.url, headers, {
          jsonrpc: '2.0',
          id: `call-${i}`,
          method: 'tools/call',
          params: { name: 'legacy___use_aws', arguments: { command: `job ${i}` } },
        });
        for await (const event of sseEvents(res)) {
          if (event.message?.method === 'elicitation/create') asked(event.message);
          if (event.message?.id === `call-${i}`) return event.message;
        }
        const ended = new Error(
          `call-${i}: the stream ended without its result (HTTP ${res.status}); ${environmentsReport(gateway)}`,
        );
        unasked(ended); // a call that never asked fails the test here, rather than leaving it waiting
        throw ended;
      })();
    });
    const asked = await Promise.all(questions);
    // Every call waits for its person, all of them in one environment's process.
    expect(asked.map((q) => q.params.message)).toEqual(sessions.map((_, i) => `Run \`job ${i}\`?`));
    const holding = gateway.environments().filter((env) => env.open >= 64);
    expect(holding).toHaveLength(1);
    // The answers, in reverse order; with the first environment full, they start a second one.
    const answers = await Promise.all(
      [...asked.keys()].reverse().map(async (i) => {
        const res = await postRetrying(gateway.url, sessions[i]!.headers, {
          jsonrpc: '2.0',
          id: asked[i]!.id,
          ...accept(),
        });
        // A refusal, with its reason and what the environments went through.
        if (res.status !== 202) return `${res.status} ${await res.text()} ${environmentsReport(gateway)}`;
        await res.body?.cancel();
        return 202;
      }),
    );
    expect(new Set(answers)).toEqual(new Set([202]));
    const results = await Promise.all(streams);
    expect(results.map((r) => r.result?.content?.[0]?.text)).toEqual(sessions.map((_, i) => `executed: job ${i}`));
    expect(gateway.stats().maxOpenPerEnvironment).toBeGreaterThanOrEqual(64);
  });
});

describe('across environments (one request per environment)', () => {
  let gateway: WebFunctionMode;
  beforeAll(async () => {
    gateway = await start({ maxConcurrencyPerEnvironment: 1 });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('a held 2025 elicitation is answered through another environment', async () => {
    const { headers } = await initSession(gateway.url, { capabilities: ALL });
    const before = gateway.stats().environmentsStarted;
    const call = await callAndAnswer(
      gateway.url,
      headers,
      { id: 'across', params: { name: 'legacy___use_aws', arguments: { command: 'across' } } },
      accept,
    );
    expect(call.answerStatuses).toEqual([202]);
    expect(call.response.result.content[0].text).toBe('executed: across');
    // The answer could not share the call's environment (one request each): it went to another one.
    expect(gateway.stats().environmentsStarted).toBeGreaterThanOrEqual(Math.max(before, 2));
  });

  it.each([
    ['a 2026-07-28 client, its input round (no storage)', 'v2 pin 2026-07-28', 'modern___use_aws'],
    ['a 2026-07-28 client bridged to a 2025-only target', 'v2 pin 2026-07-28', 'legacy___use_aws'],
    ['a 2025 client bridged to a 2026-07-28 target', 'v1', 'modern___use_aws'],
  ] as const)('%s gets its result', async (_label, kind, tool) => {
    const client = await connectClient(kind, gateway.url, 30_000);
    try {
      const result = await client.callTool(tool, { command: kind });
      expect(result.text).toBe(`executed: ${kind}`);
      expect(client.asked.map((a) => a.method)).toEqual(['elicitation/create']);
    } finally {
      await client.close();
    }
  });
});

describe("scale-in's SIGTERM while a call waits", () => {
  let gateway: WebFunctionMode;
  beforeAll(async () => {
    gateway = await start();
  });
  afterAll(async () => {
    await gateway?.close();
  });

  /** SIGTERM to the environment holding the call, as the platform sends it on scale-in. */
  const terminateHolder = (): number => {
    const pid = gateway.environments().find((env) => env.open > 0)?.pid;
    if (pid === undefined) throw new Error('no environment holds the call');
    process.kill(pid, 'SIGTERM');
    return pid;
  };

  it('a call that can go on elsewhere is released: the official SDK client reconnects to another environment, answers, and gets its result', async () => {
    const client = new V1Client({ name: 'scale-in-test', version: '1.0.0' }, { capabilities: ALL });
    let terminated: number | undefined;
    client.setRequestHandler(ElicitRequestSchema, async () => {
      // The person is thinking when the platform scales the environment in.
      terminated = terminateHolder();
      await eventually(() => expect(gateway.environments().map((env) => env.pid)).not.toContain(terminated), 10_000);
      return { action: 'accept', content: { confirm: true } };
    });
    await client.connect(new V1Transport(new URL(gateway.url)), { timeout: 30_000 });
    try {
      const result = await client.callTool(
        { name: 'modern___use_aws', arguments: { command: 'survives scale-in' } },
        CallToolResultSchema,
        { timeout: 60_000 },
      );
      expect(result.content).toEqual([expect.objectContaining({ text: 'executed: survives scale-in' })]);
      expect(terminated).toBeDefined();
    } finally {
      await client.close();
    }
  });

  it('a call that cannot (a 2025 target without an event store) ends with the retryable -32001, and its records are removed', async () => {
    const { headers, sessionId } = await initSession(gateway.url, { capabilities: ALL });
    const res = await post(gateway.url, headers, {
      jsonrpc: '2.0',
      id: 'cut',
      method: 'tools/call',
      params: { name: 'legacy___use_aws', arguments: { command: 'cut' } },
    });
    let final: Json | undefined;
    for await (const event of sseEvents(res)) {
      if (event.message?.method === 'elicitation/create') terminateHolder();
      if (event.message?.id === 'cut') final = event.message;
    }
    expect(final).toMatchObject({
      id: 'cut',
      error: { code: -32001, message: expect.stringMatching(/shutting down/), data: { retryable: true } },
    });
    await eventually(async () =>
      expect((await sessionItems(dynamo.endpoint, sessionId)).filter((i) => String(i.sk).startsWith('P#'))).toEqual([]),
    );
  });
});

describe('browser origins', () => {
  let gateway: WebFunctionMode;
  beforeAll(async () => {
    gateway = await start({
      config: {
        logLevel: 'SILENT',
        targets: [{ name: 'legacy', url: legacy.url }],
        cors: { allowedOrigins: ['http://localhost:6274'] },
      },
    });
  });
  afterAll(() => gateway?.close());

  it('an origin the configuration allows (the Inspector) calls it; any other is refused as foreign', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'inspector', version: '1' } },
    };
    const allowed = await post(gateway.url, { origin: 'http://localhost:6274' }, body);
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('http://localhost:6274');
    await allowed.body?.cancel();
    const foreign = await post(gateway.url, { origin: 'http://evil.example' }, body);
    expect(foreign.status).toBe(403);
    await foreign.body?.cancel();
  });
});
