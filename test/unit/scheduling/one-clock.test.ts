import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * The gateway reads the time and sets its timers on one clock, chosen at bootstrap and handed to every
 * part (`deps.clock`, scheduling/clock.ts): a test's fake clock then governs all of it. Node's clock is
 * read in one place, and Node's timers are set only where the wait is the platform's rather than the
 * protocol's — each such place named here with why.
 */

const LAMBDA = join(__dirname, '../../../lambda');

/** Where Node's own timers stay, and why: none of them is a time the protocol reads. */
const NODE_TIMERS: Record<string, string> = {
  'scheduling/call-timers.ts': "Node's timers, unref'd: what the system clock schedules on",
  'http/sse.ts': "the keep-alive comments and the stalled-client check follow the client's socket",
  'http/deferred-response.ts': 'how long a response stays JSON before it turns to SSE: a wire choice',
  'calls/active-calls.ts': "the bound on a shutdown (SIGTERM's grace), the platform's time",
  'targets/sse-reader.ts': "how long a closed stream's tail is read: the socket's",
  'targets/target-clock.ts': "a target's idle timeout, on the call's own socket activity",
  'state/dynamo-client.ts': "the local dynalite's start-up wait (development only)",
  'adapters/streaming-handler.ts': "the flush after SIGTERM: the Lambda runtime's grace",
  'web-function.ts': "the flush after SIGTERM: the Web Function's grace",
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(LAMBDA).map((path) => ({
  name: relative(LAMBDA, path),
  // Comments say "Date.now()" or "setTimeout" in prose: only code counts.
  code: readFileSync(path, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, ''),
}));

describe('one clock for the whole gateway', () => {
  it("reads Node's clock only in scheduling/clock.ts", () => {
    const readers = files.filter((f) => /\bDate\.now\(|new Date\(\)/.test(f.code)).map((f) => f.name);
    expect(readers.filter((name) => name !== 'scheduling/clock.ts')).toEqual([]);
  });

  it("sets Node's timers only where the wait is the platform's, each named with why", () => {
    const setters = files
      .filter((f) => /(?<![.\w])(setTimeout|setInterval)\(/.test(f.code))
      .map((f) => f.name)
      .sort();
    expect(setters).toEqual(Object.keys(NODE_TIMERS).sort());
  });

  it('sets no Node timer through an import of node:timers (an alias would slip past the check above)', () => {
    const importers = files.filter((f) => /from ['"](node:)?timers(\/promises)?['"]/.test(f.code)).map((f) => f.name);
    expect(importers).toEqual([]);
  });

  it('uses the system clock only where the gateway starts: a part takes the clock it is given', () => {
    const users = files.filter((f) => /\bsystemClock\b/.test(f.code)).map((f) => f.name);
    expect(users.sort()).toEqual(['app/bootstrap.ts', 'handler.ts', 'scheduling/clock.ts', 'web-function.ts']);
  });

  it('has no default clock in a part: the bootstrap chooses it', () => {
    const defaults = files
      .filter((f) => f.name !== 'app/bootstrap.ts' && /\?\?\s*systemClock|=\s*systemClock\b/.test(f.code))
      .map((f) => f.name);
    expect(defaults).toEqual([]);
  });
});
