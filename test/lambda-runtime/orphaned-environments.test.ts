import { readdirSync, readFileSync } from 'node:fs';
import { type DynamoProcess, startDynamoProcess, startGatewayProcess } from '../support/gateway-process';
import { eventually, initSession, JSON_AND_SSE, post, readMessage } from '../support/mcp-http';

/**
 * `npm start -- --lambda` (and `--web-function`) killed outright (SIGKILL: no handler runs) takes its
 * execution environments with it. They run in processes of their own (a frozen one is stopped), so
 * nothing of the kernel's ends them when their parent dies: the emulator's guard does.
 */

jest.setTimeout(120_000);

/** /proc/PID/stat: the state letter and the parent's pid. */
function stat(pid: number): { state: string; ppid: number } | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return { state: fields[0] ?? '', ppid: Number(fields[1]) };
  } catch {
    return undefined;
  }
}

/** A process that has ended (a zombie nobody reaped has ended too). */
const gone = (pid: number): boolean => {
  const state = stat(pid)?.state;
  return state === undefined || state === 'Z' || state === 'X';
};

function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => stat(pid)?.ppid === parent);
}

const leftovers: number[] = [];
let dynamo: DynamoProcess;
beforeAll(async () => {
  dynamo = await startDynamoProcess();
});
afterAll(async () => {
  // Whatever a failed run left behind is ended here, not left to the machine.
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await dynamo?.close();
});

describe.each([
  ['--lambda', { lambda: true }, 'a frozen one and a busy one'],
  ['--web-function', { webFunction: true }, 'one serving a stream'],
])('npm start -- %s killed with SIGKILL', (form, options, which) => {
  it(`takes its environments with it (${which})`, async () => {
    const gateway = await startGatewayProcess({ targets: [] }, dynamo.endpoint, options);
    try {
      const runner = gateway.child.pid!;
      // One environment used and left (frozen, under --lambda), one held by a client's stream.
      const { headers } = await initSession(gateway.url);
      const held = await fetch(gateway.url, { headers: { ...headers, accept: JSON_AND_SSE } });
      expect(held.status).toBe(200);
      const list = await post(gateway.url, headers, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
      expect((await readMessage(list)).result.tools).toEqual([]);
      const environments = childrenOf(runner).filter((pid) =>
        /(aws-lambda-ric|mcp-gateway-lambda-)/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')),
      );
      leftovers.push(...environments);
      const states = () => environments.map((pid) => stat(pid)?.state).sort();
      // --lambda: the stream holds one environment (running); the list call started a second, frozen (T)
      // once its runtime asks for its next event, a moment after the answer.
      await eventually(() =>
        expect(states()).toEqual(
          form === '--lambda' ? [expect.stringMatching(/^[RSD]$/), 'T'] : [expect.stringMatching(/^[RSD]$/)],
        ),
      );
      await held.body?.cancel().catch(() => undefined);

      expect(await gateway.stop('SIGKILL')).toBe('SIGKILL');
      // Bounded: generous for a loaded machine; it takes milliseconds.
      await eventually(
        () => expect(environments.filter((pid) => !gone(pid)).map((pid) => `${pid} ${stat(pid)?.state}`)).toEqual([]),
        10_000,
      );
    } finally {
      gateway.child.kill('SIGKILL');
    }
  });
});
