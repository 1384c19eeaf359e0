import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { GatewayKind } from '../support/gateways';
import { itNeeding, pythonClients } from '../support/prerequisites';
import { startV1NotifyingServer } from '../support/servers/v1-notifying-server';
import { startV1PushServer } from '../support/servers/v1-push-server';
import { startV2DefaultServer } from '../support/servers/v2-default-server';
import { recipesPython } from '../support/setup/python-environment';
import { withGateway } from '../support/with-gateway';
import { connectClient } from './clients';

/**
 * What a target sends besides a call's result reaches a 2025 client through the gateway as it does
 * directly, with clients that declare no input capabilities (nothing asks them anything):
 * - a 2025 target (v1 SDK) that logs with `server.sendLoggingMessage(params, sessionId)`: on its
 *   session's GET stream, not tied to the call, just before the tool returns. Directly, a client's own
 *   GET stream takes it; through the gateway the call in flight listens on the target's GET stream and
 *   relays it on its own stream, before the result (once the instance has seen the target talk there);
 * - list changes a 2025 target announces on its GET stream during a call (a tool added);
 * - a v2 SDK server whose 2025 leg keeps no session, which the gateway reaches in 2026-07-28 for 2025
 *   clients: its log messages (`ctx.mcpReq.log`) and progress on the call's stream. A 2026-07-28
 *   request without a log level gets no log messages, where a 2025 session that set none gets every
 *   level: the gateway asks for `debug` until the session sets a level, then for that level.
 * Clients: the TypeScript SDK v1 (one that opens no GET stream, so everything must come on the call's
 * stream), the v2 in its 2025 mode and the Python SDK 2.x (its own GET stream, as its docs write a
 * client), directly and through the gateway, on the local server and the Lambda runtime. Every case
 * fails without the gateway's listening on the target's GET stream or its default log level.
 */

// A Python client's start and calls, three targets in a row: beside a second copy of the suite one case took over 90 s.
jest.setTimeout(240_000);

const ROOT = join(__dirname, '../..');
const python = recipesPython();
// The Python SDK's client and fastmcp's (a client built on it), in the environment the test set-up prepares.
const withPython = itNeeding(pythonClients);

interface Heard {
  text: string;
  logs: Array<{ level: string; data: unknown }>;
  logsBeforeResult: number;
  progress: number[];
  listChanges: string[];
}

/**
 * The Python SDK client of test/support/clients/python_notifications.py (or fastmcp's, `fastmcp`): one
 * call, what it heard.
 */
async function pythonCall(url: string, tool: string, args: object, level?: string, client = 'python'): Promise<Heard> {
  const script = join(ROOT, `test/support/clients/${client}_notifications.py`);
  const argv = [script, url, tool, JSON.stringify(args), ...(level ? [level] : [])];
  const { stdout } = await promisify(execFile)(python, argv, { timeout: 60_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Heard;
}

/**
 * What a Python client hears directly from a kind of target (`push`, `bridged`): the same for every
 * gateway kind below (each starts its own instance of the same server), so it runs once per file.
 */
const directRuns = new Map<string, Promise<Heard>>();
function pythonDirect(targetKind: string, url: string, tool: string, client = 'python'): Promise<Heard> {
  const key = `${targetKind} ${tool} ${client}`;
  let run = directRuns.get(key);
  if (!run) {
    run = pythonCall(url, tool, { steps: 1 }, undefined, client);
    directRuns.set(key, run);
  }
  return run;
}

/**
 * A TypeScript SDK v1 client declaring no capabilities whose GET requests are answered 405 by its own
 * fetch (a client MAY open no GET stream; the transport goes on without one): what it hears comes on
 * its calls' streams. Records what arrived before each call's result.
 */
async function v1Client(url: string) {
  const logs: Heard['logs'] = [];
  const listChanges: string[] = [];
  const client = new V1Client({ name: 'notifications-test', version: '1.0.0' }, { capabilities: {} });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push({ level: n.params.level, data: n.params.data });
  });
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => {
    listChanges.push(n.method);
  });
  const transport = new V1Transport(new URL(url), {
    fetch: async (input, init) =>
      init?.method === 'GET' ? new Response(null, { status: 405 }) : fetch(input as string, init),
  });
  await client.connect(transport, { timeout: 10_000 });
  const call = async (name: string, args: Record<string, unknown>): Promise<Heard> => {
    const progress: number[] = [];
    const fromLog = logs.length;
    const fromChanges = listChanges.length;
    const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, {
      timeout: 30_000,
      onprogress: (p) => progress.push(p.progress),
    });
    const heard = logs.slice(fromLog);
    return {
      text: (result.content as Array<{ text?: string }>)[0]?.text ?? '',
      logs: heard,
      logsBeforeResult: heard.length,
      progress,
      listChanges: listChanges.slice(fromChanges),
    };
  };
  return { client, call };
}

const EVERY_LEVEL = [
  { level: 'debug', data: 'step 1 detail' },
  { level: 'info', data: 'step 1' },
  { level: 'warning', data: 'long_task finished 1' },
];

const KINDS: GatewayKind[] = ['local server', 'lambda runtime', 'web function'];

describe.each(KINDS)('through the %s', (kind) => {
  const gw = withGateway(
    (t) => ({
      logLevel: 'SILENT',
      // What a target logs on its GET stream just before it answers arrives a few milliseconds after the
      // answer now and then; on a loaded machine (CI) later: the window here is generous, the default 10 ms.
      targetStreamSettleMs: 250,
      targets: [
        { name: 'push', url: t.push.url },
        { name: 'notify', url: t.notify.url },
        { name: 'bridged', url: t.bridged.url },
      ],
    }),
    {
      kind,
      targets: {
        push: () => startV1PushServer(),
        notify: () => startV1NotifyingServer(),
        bridged: () => startV2DefaultServer(),
      },
    },
  );

  describe('a 2025 target logging on its session GET stream (v1 `sendLoggingMessage(params, sessionId)`)', () => {
    it('reaches a v1 client that has no GET stream, every level, on the call stream before the result', async () => {
      const { client, call } = await v1Client(gw.url);
      try {
        // An instance waits for a target's GET stream to settle after the answer once it has seen the
        // target talk there (lambda/README.md): until then a message may come a moment after the answer.
        let heard = 0;
        for (let i = 0; i < 10 && heard === 0; i++) heard = (await call('push___long_task', { steps: 1 })).logs.length;
        expect(heard).toBeGreaterThan(0);
        for (let i = 0; i < 5; i++) {
          const heard = await call('push___long_task', { steps: 1 });
          expect(heard).toMatchObject({ text: 'finished 1 steps', progress: [1] });
          expect(heard.logs).toEqual(EVERY_LEVEL);
        }
      } finally {
        await client.close();
      }
    });

    withPython('reaches the Python SDK client as it does directly', async () => {
      const direct = await pythonDirect('push', gw.targets.push.url, 'long_task');
      expect(direct.logs).toEqual(EVERY_LEVEL);
      const through = await pythonCall(gw.url, 'push___long_task', { steps: 1 });
      // On the call's stream (before the result), or the client's own GET stream once it listens to the
      // target session (as directly, where they come on that stream, in no order with the result).
      expect(through).toMatchObject({ text: direct.text, logs: direct.logs, progress: direct.progress });
    });
  });

  withPython('fastmcp (4, its 2025 mode) gets what the targets log, as it does directly', async () => {
    for (const [targetKind, target, tool] of [
      ['push', gw.targets.push.url, 'push___long_task'],
      ['bridged', gw.targets.bridged.url, 'bridged___long_task'],
    ] as const) {
      const direct = await pythonDirect(targetKind, target, 'long_task', 'fastmcp');
      expect(direct.logs).toEqual(EVERY_LEVEL);
      const through = await pythonCall(gw.url, tool, { steps: 1 }, undefined, 'fastmcp');
      expect(through).toMatchObject({ text: direct.text, logs: direct.logs, progress: direct.progress });
    }
  });

  it('a tool a 2025 target adds during a call: its list change reaches the client, and the new tool is listed', async () => {
    const { client, call } = await v1Client(gw.url);
    try {
      // As for log messages (above): once the instance has seen the target talk on its GET stream.
      let warmed = 0;
      for (let i = 0; i < 10 && warmed === 0; i++)
        warmed = (await call('notify___log', { level: 'info', data: 'warm-up' })).logs.length;
      expect(warmed).toBeGreaterThan(0);
      const name = `added_${kind.replace(/\W/g, '_')}`;
      const heard = await call('notify___add_tool', { name });
      expect(heard.text).toBe(`added ${name}`);
      expect(heard.listChanges).toEqual(['notifications/tools/list_changed']);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain(`notify___${name}`);
    } finally {
      await client.close();
    }
  });

  describe('a 2026-07-28 target reached for 2025 clients (v2 SDK, 2025 leg without sessions)', () => {
    it('sends its log messages at every level until the session sets one, then at that level and above', async () => {
      const { client, call } = await v1Client(gw.url);
      try {
        const heard = await call('bridged___long_task', { steps: 1 });
        expect(heard).toMatchObject({ text: 'finished 1 steps', progress: [1] });
        expect(heard.logs).toEqual(EVERY_LEVEL);
        await client.setLoggingLevel('warning');
        expect((await call('bridged___long_task', { steps: 1 })).logs).toEqual([EVERY_LEVEL[2]]);
      } finally {
        await client.close();
      }
    });

    it('reaches the TypeScript SDK v2 client in its 2025 mode, every level until it sets one', async () => {
      const client = await connectClient('v2 legacy', gw.url, 30_000);
      try {
        expect(client.version).toBe('2025-11-25');
        const progress: number[] = [];
        const result = await client.callTool(
          'bridged___long_task',
          { steps: 1 },
          { onprogress: (p) => progress.push(p.progress) },
        );
        expect({ text: result.text, progress, logs: client.logs }).toEqual({
          text: 'finished 1 steps',
          progress: [1],
          logs: EVERY_LEVEL,
        });
        await client.setLoggingLevel('error');
        await client.callTool('bridged___long_task', { steps: 1 });
        expect(client.logs).toEqual(EVERY_LEVEL); // nothing at "error" or above was logged
      } finally {
        await client.close();
      }
    });

    withPython('reaches the Python SDK client as it does directly; a level it sets is kept', async () => {
      const direct = await pythonDirect('bridged', gw.targets.bridged.url, 'long_task');
      expect(direct.logs).toEqual(EVERY_LEVEL);
      const through = await pythonCall(gw.url, 'bridged___long_task', { steps: 1 });
      expect(through).toMatchObject({ text: direct.text, logs: direct.logs, progress: direct.progress });
      // Directly, this server's sessionless 2025 leg forgets a level with the request that set it (it
      // logs every level after `logging/setLevel`); the gateway keeps it in the session and asks for it.
      const leveled = await pythonCall(gw.url, 'bridged___long_task', { steps: 1 }, 'info');
      expect(leveled.logs).toEqual(EVERY_LEVEL.slice(1));
    });
  });
});
