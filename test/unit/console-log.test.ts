import { createConsoleLogger } from '../../dev/console-log/console-logger';
import { colourFor, defaultLogFormat } from '../../dev/console-log/format';
import { environmentLogRelay } from '../../dev/console-log/relay';
import { renderLogLine } from '../../dev/console-log/render';

/** `npm start`'s console: a short line per log entry for a person, the Lambda's JSON for programs. */

const TIME = /^\d\d:\d\d:\d\d\.\d{3} /;
const ACCESS = {
  level: 'INFO',
  message: 'mcp request',
  timestamp: '2026-12-07T04:36:37.111Z',
  service: 'mcp-gateway',
  sampling_rate: 0,
  requestId: '26e96d09-ff25-4baf-a4bd-96a6750da2b9',
  traceId: '04887ef85fe65ca472a2ba74552f44ec',
  principal: 'anonymous',
  sessionId: 'Hz7bsUb1jyik0_uNz7lFSXSyQ-euESR8ZEn_srt8_Pw',
  era: 'legacy',
  httpMethod: 'POST',
  kind: 'request',
  method: 'tools/call',
  target: 'demo',
  tool: 'echo',
  status: 200,
  inputRounds: 0,
  durationMs: 111,
  outcome: 'complete',
};

/** Runs `body` with stdout and stderr captured. */
function captured(body: () => void): { stdout: string; stderr: string } {
  const out = { stdout: '', stderr: '' };
  const spies = (['stdout', 'stderr'] as const).map((name) =>
    jest.spyOn(process[name], 'write').mockImplementation((chunk: string | Uint8Array) => {
      out[name] += String(chunk);
      return true;
    }),
  );
  try {
    body();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return out;
}

describe('a log entry as a line', () => {
  it('says when, how serious, what happened and the fields that matter; ids shortened, machine keys left out', () => {
    const line = renderLogLine(ACCESS, { colour: false });
    expect(line).toMatch(TIME);
    expect(line.replace(TIME, '')).toBe(
      'INFO  mcp request  POST tools/call target=demo tool=echo status=200 outcome=complete 111 ms session=Hz7bsUb1…',
    );
  });

  it('quotes values with spaces, writes an error as its name and message, and other objects as JSON', () => {
    const line = renderLogLine(
      {
        level: 'WARN',
        message: 'target not reachable at start-up',
        timestamp: '2026-12-07T04:36:37.111Z',
        target: 'gone',
        error: { name: 'DependencyFailedError', message: 'target gone: unreachable', stack: 'at …' },
        names: ['a', 'b'],
        legacy: false,
      },
      { colour: false },
    );
    expect(line.replace(TIME, '')).toBe(
      'WARN  target not reachable at start-up  target=gone error="DependencyFailedError: target gone: unreachable" names=["a","b"] legacy=false',
    );
  });

  it('colours the level (and dims the time and keys) when asked', () => {
    // ESC written as <ESC>, so the expected codes can be read.
    const visible = (line: string) => line.replaceAll('\u001b', '<ESC>').replace(/\d\d:\d\d:\d\d\.\d{3}/, 'TIME');
    const line = (level: string) => visible(renderLogLine({ level, message: 'm', target: 't' }, { colour: true }));
    expect(line('WARN')).toBe('<ESC>[2mTIME<ESC>[0m <ESC>[33mWARN <ESC>[0m m  <ESC>[2mtarget=<ESC>[0mt');
    expect(line('ERROR')).toContain('<ESC>[31;1mERROR<ESC>[0m');
    expect(line('INFO')).toContain('<ESC>[36mINFO <ESC>[0m');
    expect(line('DEBUG')).toContain('<ESC>[2mDEBUG<ESC>[0m');
  });
});

describe('choosing the format and the colours', () => {
  it('is human on a terminal and JSON otherwise', () => {
    expect(defaultLogFormat({ isTTY: true })).toBe('human');
    expect(defaultLogFormat({ isTTY: false })).toBe('json');
    expect(defaultLogFormat({})).toBe('json');
  });

  it('colours a terminal that has colours, never with NO_COLOR set, never a pipe', () => {
    const terminal = { isTTY: true, hasColors: () => true };
    expect(colourFor(terminal, {})).toBe(true);
    expect(colourFor(terminal, { NO_COLOR: '1' })).toBe(false);
    expect(colourFor({ isTTY: true, hasColors: () => false }, {})).toBe(false);
    expect(colourFor({ isTTY: false }, {})).toBe(false);
  });
});

describe('the local server logger', () => {
  it('human: one line per entry, INFO and DEBUG on stdout, WARN and ERROR on stderr, below the level nothing', () => {
    const logger = createConsoleLogger('INFO', 'human');
    const { stdout, stderr } = captured(() => {
      logger.debug('not shown', { target: 'demo' });
      logger.info('mcp request', { target: 'demo', durationMs: 12 });
      logger.warn('target not reachable at start-up', { target: 'gone', error: new TypeError('fetch failed') });
    });
    expect(stdout.split('\n').map((line) => line.replace(TIME, ''))).toEqual([
      'INFO  mcp request  target=demo 12 ms',
      '',
    ]);
    expect(stderr.replace(TIME, '')).toBe(
      'WARN  target not reachable at start-up  target=gone error="TypeError: fetch failed"\n',
    );
  });

  it("json: the Lambda's own lines, unchanged", () => {
    const { stdout } = captured(() => createConsoleLogger('INFO', 'json').info('mcp request', { target: 'demo' }));
    expect(JSON.parse(stdout)).toEqual({
      level: 'INFO',
      message: 'mcp request',
      timestamp: expect.any(String),
      service: 'mcp-gateway',
      sampling_rate: 0,
      target: 'demo',
    });
  });

  it('human: a line holds no value the JSON line does not', () => {
    const entry = { target: 'mine', reason: 'a b', nested: { depth: 2 }, error: new Error('boom') };
    const human = captured(() => createConsoleLogger('INFO', 'human').info('connection stored', entry)).stdout;
    const json = captured(() => createConsoleLogger('INFO', 'json').info('connection stored', entry)).stdout;
    const values = [...human.replace(TIME, '').matchAll(/\w+=("(?:[^"\\]|\\.)*"|\S+)/g)].map((m) => m[1] ?? '');
    expect(values).toHaveLength(4);
    for (const value of values) {
      const text = value.startsWith('"') ? (JSON.parse(value) as string) : value;
      for (const part of text.split(': ')) expect(json).toContain(part.replace(/^\{|\}$/g, ''));
    }
  });
});

describe("the environments' output (--lambda, --web-function)", () => {
  const entry = JSON.stringify(ACCESS);
  const metric =
    '{"_aws":{"Timestamp":1796618226631,"CloudWatchMetrics":[{"Namespace":"McpGateway","Dimensions":[["service","target"]],"Metrics":[{"Name":"TargetLatency","Unit":"Milliseconds"}]}]},"service":"McpGateway","target":"demo","TargetLatency":46.29}';

  it('human: the gateway entries as lines under the environment, metric lines left out, the rest as it is', () => {
    const lines: string[] = [];
    const relay = environmentLogRelay('human', (line) => lines.push(line), false);
    for (const line of [
      `[env 1] ${entry}`,
      `[env 2] ${metric}`,
      '[env 1] invocation 1 failed: {"errorType":"Error"}',
      '[env 2] Task timed out after 1 seconds',
    ])
      relay(line);
    expect(lines.map((line) => line.replace(TIME, ''))).toEqual([
      'INFO  [env 1] mcp request  POST tools/call target=demo tool=echo status=200 outcome=complete 111 ms session=Hz7bsUb1…',
      '[env 1] invocation 1 failed: {"errorType":"Error"}',
      '[env 2] Task timed out after 1 seconds',
    ]);
  });

  it('json: every line as the environment wrote it, metric lines included', () => {
    const lines: string[] = [];
    const relay = environmentLogRelay('json', (line) => lines.push(line));
    relay(`[env 1] ${entry}`);
    relay(`[env 2] ${metric}`);
    expect(lines).toEqual([`[env 1] ${entry}`, `[env 2] ${metric}`]);
  });
});
