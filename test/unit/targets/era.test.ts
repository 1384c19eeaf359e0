import type { TargetConfig } from '../../../lambda/config/schema';
import { createLogger } from '../../../lambda/observability/logger';
import { DependencyFailedError } from '../../../lambda/protocol/errors';
import type { JSONRPCResponse } from '../../../lambda/protocol/jsonrpc';
import { MODERN_PROTOCOL_VERSION } from '../../../lambda/protocol/versions';
import { EraProbe } from '../../../lambda/targets/era';
import type { ModernTargetClient } from '../../../lambda/targets/modern-client';
import { clockAt } from '../../support/fake-clock';

/**
 * Which era the gateway speaks to a target (targets/era.ts), against a fake `server/discover`: what
 * each probe answer means, that a verdict is kept for `ttlMs` and learned again after it (an injected
 * clock crosses it), that waiters share one probe, and what `forget` and a refused handshake change.
 */

const TTL_MS = 60_000;

/** What the fake target answers to `server/discover`: a response, or a thrown error. */
type Answer = Omit<JSONRPCResponse, 'jsonrpc' | 'id'> | Error | 'hang';

interface Fake {
  probe: EraProbe;
  /** Advances the injected clock. */
  advance(ms: number): void;
  /** The answer to the next probes. */
  answer: Answer;
  /** Resolves a pending `gate` (probes wait on it when set). */
  gate?: Promise<void>;
}

const discovered = (versions: string[]): Answer => ({
  result: { supportedVersions: versions, capabilities: {}, serverInfo: { name: 't', version: '1' } },
});

function fake(
  answer: Answer,
  options: { era?: TargetConfig['era']; timeoutMs?: number } = {},
): Fake & { probes(): number } {
  let now = 1_000_000;
  const state: Fake & { probes(): number } = {
    answer,
    advance: (ms) => {
      now += ms;
    },
    probes: () => state.probe.probes,
    probe: undefined as unknown as EraProbe, // set just below
  };
  const client = {
    async request(_method: string, _params: unknown, _meta: unknown, opts: { signal?: AbortSignal } = {}) {
      if (state.gate) await state.gate;
      const current = state.answer;
      if (current === 'hang') {
        // Like a target that never answers: only the probe's own timeout ends it.
        return new Promise<never>((_resolve, reject) =>
          opts.signal?.addEventListener('abort', () => reject(opts.signal?.reason), { once: true }),
        );
      }
      if (current instanceof Error) throw current;
      return { response: { jsonrpc: '2.0', id: 1, ...current } as JSONRPCResponse, httpStatus: 200 };
    },
  } as unknown as ModernTargetClient; // only `request` is used by the probe
  const config = { name: 't', url: 'http://127.0.0.1:9/mcp', era: options.era } as TargetConfig;
  state.probe = new EraProbe(
    new Map([['t', config]]),
    new Map([['t', client]]),
    createLogger('SILENT'),
    clockAt(() => now),
    {
      ttlMs: TTL_MS,
      timeoutMs: options.timeoutMs,
    },
  );
  return state;
}

describe('the modern verdict: what a server/discover answer means', () => {
  it.each<[string, boolean, Answer]>([
    ['a DiscoverResult naming 2026-07-28', true, discovered([MODERN_PROTOCOL_VERSION])],
    ['a DiscoverResult naming only 2025 versions', false, discovered(['2025-11-25'])],
    ['-32601 method not found (a 2025 server)', false, { error: { code: -32601, message: 'Method not found' } }],
    ['-32020 (a modern error)', true, { error: { code: -32020, message: 'x' } }],
    [
      '-32022 naming 2026-07-28 among the supported versions',
      true,
      { error: { code: -32022, message: 'x', data: { supported: [MODERN_PROTOCOL_VERSION] } } },
    ],
    [
      '-32022 naming only 2025 versions',
      false,
      { error: { code: -32022, message: 'x', data: { supported: ['2025-11-25'] } } },
    ],
    [
      'an HTTP 400 "session required" (a thrown failure other than unreachable)',
      false,
      new DependencyFailedError('t', 'HTTP 400'),
    ],
  ])('%s → serves 2026-07-28: %s', async (_what, serves, answer) => {
    const f = fake(answer);
    expect((await f.probe.modernVerdict('t')).serves).toBe(serves);
    expect(await f.probe.eraFor('t', 'modern')).toBe(serves ? 'modern' : 'legacy');
    expect(f.probes()).toBe(1);
  });

  it('keeps the DiscoverResult of a target that serves 2026-07-28', async () => {
    const f = fake(discovered([MODERN_PROTOCOL_VERSION]));
    expect((await f.probe.modernVerdict('t')).discover?.supportedVersions).toEqual([MODERN_PROTOCOL_VERSION]);
  });

  it('a probe that times out is a "not modern" verdict (the probe timeout, not the caller, ends it)', async () => {
    const f = fake('hang', { timeoutMs: 20 });
    expect(await f.probe.modernVerdict('t')).toEqual({ serves: false });
  });
});

describe('how long a verdict holds', () => {
  it('is reused within ttlMs and probed again after it (an upgraded target is noticed)', async () => {
    const f = fake(discovered(['2025-11-25']));
    expect(await f.probe.eraFor('t', 'modern')).toBe('legacy');
    f.answer = discovered([MODERN_PROTOCOL_VERSION]); // the target was upgraded
    f.advance(TTL_MS - 1);
    expect(await f.probe.eraFor('t', 'modern')).toBe('legacy');
    expect(f.probes()).toBe(1);
    f.advance(1);
    expect(await f.probe.eraFor('t', 'modern')).toBe('modern');
    expect(f.probes()).toBe(2);
  });

  it('is dropped by forget (a failed call): the next request probes again', async () => {
    const f = fake(discovered([MODERN_PROTOCOL_VERSION]));
    await f.probe.eraFor('t', 'modern');
    f.probe.forget('t');
    f.answer = { error: { code: -32601, message: 'Method not found' } };
    expect(await f.probe.eraFor('t', 'modern')).toBe('legacy');
    expect(f.probes()).toBe(2);
  });

  it('an unreachable target gives no verdict: the request fails as DependencyFailed and the next one probes again', async () => {
    const f = fake(new DependencyFailedError('t', 'unreachable'));
    await expect(f.probe.eraFor('t', 'modern')).rejects.toBeInstanceOf(DependencyFailedError);
    f.answer = discovered([MODERN_PROTOCOL_VERSION]);
    expect(await f.probe.eraFor('t', 'modern')).toBe('modern');
    expect(f.probes()).toBe(2);
  });
});

describe('one probe for every request that waits for it', () => {
  it('concurrent requests share one probe; one that goes away fails alone, the others get the verdict', async () => {
    const f = fake(discovered([MODERN_PROTOCOL_VERSION]));
    let open: () => void = () => undefined;
    f.gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const leaving = new AbortController();
    const first = f.probe.eraFor('t', 'modern');
    const gone = f.probe.eraFor('t', 'modern', leaving.signal);
    const third = f.probe.eraFor('t', 'modern');
    leaving.abort(new Error('client went away'));
    await expect(gone).rejects.toThrow('client went away');
    open();
    expect(await Promise.all([first, third])).toEqual(['modern', 'modern']);
    expect(f.probes()).toBe(1);
  });
});

describe('legacy callers', () => {
  it('speak legacy without probing; after a refused handshake, modern for ttlMs, then legacy again', async () => {
    const f = fake(discovered([MODERN_PROTOCOL_VERSION]));
    expect(await f.probe.eraFor('t', 'legacy')).toBe('legacy');
    f.probe.noteLegacyUnsupported('t');
    expect(await f.probe.eraFor('t', 'legacy')).toBe('modern');
    f.advance(TTL_MS);
    expect(await f.probe.eraFor('t', 'legacy')).toBe('legacy');
    expect(f.probes()).toBe(0);
  });

  it('forget also drops a refused handshake', async () => {
    const f = fake(discovered([MODERN_PROTOCOL_VERSION]));
    f.probe.noteLegacyUnsupported('t');
    f.probe.forget('t');
    expect(await f.probe.eraFor('t', 'legacy')).toBe('legacy');
  });
});

describe("a target's era setting", () => {
  it("'legacy' is spoken to every caller and never probed", async () => {
    const f = fake(discovered([MODERN_PROTOCOL_VERSION]), { era: 'legacy' });
    expect(await f.probe.eraFor('t', 'modern')).toBe('legacy');
    expect(await f.probe.modernVerdict('t')).toEqual({ serves: false });
    expect(f.probes()).toBe(0);
  });

  it("'modern' is spoken to every caller; the probe only supplies the DiscoverResult", async () => {
    const f = fake({ error: { code: -32601, message: 'Method not found' } }, { era: 'modern' });
    expect(await f.probe.eraFor('t', 'legacy')).toBe('modern');
    expect(await f.probe.eraFor('t', 'modern')).toBe('modern');
    expect(f.probes()).toBe(0);
    expect((await f.probe.modernVerdict('t')).serves).toBe(true);
    expect(f.probes()).toBe(1);
  });

  it('an unknown target is DependencyFailed', async () => {
    const f = fake(discovered([MODERN_PROTOCOL_VERSION]));
    await expect(f.probe.eraFor('nope', 'modern')).rejects.toBeInstanceOf(DependencyFailedError);
  });
});
