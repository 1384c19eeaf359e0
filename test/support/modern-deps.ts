import { ANONYMOUS_IDENTITY } from '../../lambda/auth/identity';
import { ActiveCalls } from '../../lambda/calls/active-calls';
import type { Catalog } from '../../lambda/catalog/catalog';
import { type GatewayConfig, type GatewayConfigInput, parseConfig } from '../../lambda/config/schema';
import { SealedBox } from '../../lambda/crypto/sealed-box';
import { TaskIdSealer } from '../../lambda/crypto/task-ids';
import type { ModernDeps } from '../../lambda/modern/deps';
import { LegacySessionPool } from '../../lambda/modern/legacy-sessions';
import { ListenPlaces } from '../../lambda/modern/listen-places';
import { RequestStateSealer } from '../../lambda/modern/request-state';
import { createLogger } from '../../lambda/observability/logger';
import { DependencyFailedError, GatewayError } from '../../lambda/protocol/errors';
import type { JSONRPCResponse } from '../../lambda/protocol/jsonrpc';
import type { ListingKind } from '../../lambda/protocol/methods';
import type { JSONRPCMessage, JSONRPCNotification, ModernServerCapabilities } from '../../lambda/protocol/types';
import type { Era } from '../../lambda/protocol/versions';
import { type Clock, systemClock } from '../../lambda/scheduling/clock';
import type { LegacySession, LegacyTargetClient } from '../../lambda/targets/legacy-client';
import type { SessionStreamHandle, SessionStreamListener } from '../../lambda/targets/standalone-streams';
import type { Caller, TargetCallOptions, TargetCallRequest, TargetLink } from '../../lambda/targets/target-link';
import type { Targets } from '../../lambda/targets/targets';
import { MemorySessionStore } from './memory-store';

/**
 * The 2026-07-28 path's deps (lambda/modern/deps.ts) built from fakes, for unit tests of the modern
 * modules: scripted targets (each call answered by the test's `handle`, every call, reply, delivery and
 * ended session recorded), a catalog that routes `target___name` and `target://…` to `target`, the
 * real sealers, listen places, legacy session pool and active-call registry, and the memory store as
 * the bridge store. No socket, no process.
 */

/** A logger that writes nothing. */
export const QUIET = createLogger('SILENT');

export const SECRET = 'a-test-secret-of-at-least-32-characters!';
export const SERVER_INFO = { name: 'mcp-gateway', version: 'test' };

export interface TargetCall {
  request: TargetCallRequest;
  options: TargetCallOptions;
  caller: Caller;
}

export interface FakeTarget {
  readonly name: string;
  era: Era;
  /** Its `server/discover` capabilities (2026-07-28) or its InitializeResult's (2025). */
  capabilities: ModernServerCapabilities;
  /** The probe cannot reach it (no era verdict). */
  unreachable?: boolean;
  /** A 2026-07-28 target whose era is configured: no `server/discover` result is known of it. */
  undiscovered?: boolean;
  /** A 2025 target that answered a GET stream with 405 lately. */
  refusesStreams?: boolean;
  /** Its target session (2025 targets). */
  session?: LegacySession;
  /** How it answers a call; the default answers every call with an empty complete result. */
  handle(request: TargetCallRequest, options: TargetCallOptions): Promise<JSONRPCResponse>;
  /** How it takes an answer delivered to one of its requests (default: it takes it). */
  deliver(message: JSONRPCMessage, session: LegacySession): Promise<void>;
  readonly calls: TargetCall[];
  /** What the gateway answered to its requests during a call (TargetLink.reply). */
  readonly replies: JSONRPCResponse[];
  /** Answers delivered to it from any instance (Targets.deliver). */
  readonly delivered: JSONRPCMessage[];
  /** Sessions ended (Targets.terminate). */
  readonly terminated: LegacySession[];
  /** Its 2025 client (Targets.legacyClient: a listen opens a session of its own with it). */
  legacyClient?: LegacyTargetClient;
  /** Listening on one of its sessions' GET stream (Targets.streams.listen). */
  listen?(session: LegacySession, listener: SessionStreamListener): Promise<SessionStreamHandle>;
}

export function fakeTarget(name: string, change: Partial<FakeTarget> = {}): FakeTarget {
  const target: FakeTarget = {
    name,
    era: 'modern',
    capabilities: { tools: {} },
    handle: async () => ({ jsonrpc: '2.0', id: 0, result: {} }),
    deliver: async () => undefined,
    calls: [],
    replies: [],
    delivered: [],
    terminated: [],
    ...change,
  };
  if (target.era === 'legacy' && !change.session) {
    target.session = { targetSessionId: `${name}-session`, protocolVersion: '2025-11-25' };
  }
  return target;
}

/** A target's link for one caller: records every call and reply, answers with `handle`. */
export function linkOf(target: FakeTarget, caller: Caller): TargetLink {
  return {
    target: target.name,
    get era() {
      return target.era;
    },
    get session() {
      return target.session;
    },
    call: async (request, options) => {
      target.calls.push({ request, options, caller });
      return target.handle(request, options);
    },
    reply: async (message) => {
      target.replies.push(message);
    },
    notify: async () => undefined,
    serverCapabilities: async () => (target.era === 'legacy' ? { ...target.capabilities } : undefined),
  };
}

/** Rejects when `signal` aborts, as a target call does when the gateway cancels it. */
export function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const abort = () => reject(Object.assign(new Error(String(signal.reason)), { name: 'AbortError' }));
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
  });
}

export interface FakeCatalog {
  readonly noticed: Array<{ target: string; method: string }>;
  /** What each listing aggregates to. */
  listings: Partial<Record<ListingKind, { items: unknown[]; ttlMs: number; cacheScope: 'public' | 'private' }>>;
}

export interface ModernTestDeps {
  deps: ModernDeps;
  targets: Record<string, FakeTarget>;
  store: MemorySessionStore;
  catalog: FakeCatalog;
  config: GatewayConfig;
}

/** `target___name` → (target, name); `target://…` → target. Unknown targets: -32602 as the catalog's. */
function fakeCatalog(targets: Record<string, FakeTarget>): { catalog: Catalog; fake: FakeCatalog } {
  const fake: FakeCatalog = { noticed: [], listings: {} };
  const known = (target: string | undefined, what: string) => {
    if (target === undefined || !targets[target]) throw new GatewayError('InvalidParams', `Unknown ${what}`);
    return target;
  };
  const ownerOf = (uri: unknown) => (typeof uri === 'string' ? uri.split('://')[0] : undefined);
  const catalog = {
    // No policies: every resolved call may go (policy's own tests use the real catalog).
    authorizeCall: () => undefined,
    resolveNamed: async (called: unknown, kind: string) => {
      const [target, name] = String(called).split('___');
      return { target: known(target, `${kind} "${String(called)}"`), name: name ?? '' };
    },
    resolveResource: async (uri: unknown) => known(ownerOf(uri), `resource ${String(uri)}`),
    resolveTemplate: async (uriTemplate: unknown) => known(ownerOf(uriTemplate), 'resource template'),
    placeResources: async (uris: readonly string[]) => {
      const placed = new Map<string, string>();
      for (const uri of uris) {
        const target = ownerOf(uri);
        if (target !== undefined && targets[target]) placed.set(uri, target);
      }
      return placed;
    },
    aggregate: async (kind: ListingKind) => fake.listings[kind] ?? { items: [], ttlMs: 0, cacheScope: 'private' },
    noticed: (target: string, notification: JSONRPCNotification) => {
      fake.noticed.push({ target, method: notification.method });
    },
  };
  return { catalog: catalog as unknown as Catalog, fake }; // the part of Catalog the modern path uses
}

function fakeTargets(targets: Record<string, FakeTarget>): Targets {
  const get = (name: string) => {
    const target = targets[name];
    if (!target) throw new DependencyFailedError(name, 'not configured');
    return target;
  };
  const fake = {
    names: Object.keys(targets),
    legacyVersion: '2025-11-25',
    eras: {
      modernVerdict: async (name: string) => {
        const target = get(name);
        if (target.unreachable) throw new DependencyFailedError(name, 'unreachable');
        if (target.era !== 'modern') return { serves: false };
        if (target.undiscovered) return { serves: true };
        return { serves: true, discover: { supportedVersions: ['2026-07-28'], capabilities: target.capabilities } };
      },
    },
    open: async (name: string, caller: Caller) => linkOf(get(name), caller),
    legacyClient: (name: string) => targets[name]?.legacyClient,
    streams: {
      refusesStreams: (name: string) => get(name).refusesStreams === true,
      listen: (client: LegacyTargetClient, session: LegacySession, listener: SessionStreamListener) => {
        const listen = get(client.name).listen;
        if (!listen) throw new Error(`${client.name} has no GET stream in this test`);
        return listen(session, listener);
      },
    },
    deliver: async (name: string, session: LegacySession, message: JSONRPCMessage) => {
      const target = get(name);
      await target.deliver(message, session);
      target.delivered.push(message);
    },
    terminate: async (name: string, session: LegacySession) => {
      get(name).terminated.push(session);
    },
  };
  return fake as unknown as Targets; // the part of Targets the modern path uses
}

export function modernDeps(
  targetList: FakeTarget[],
  options: { config?: Partial<GatewayConfigInput>; store?: MemorySessionStore; clock?: Clock; now?: () => number } = {},
): ModernTestDeps {
  const targets = Object.fromEntries(targetList.map((t) => [t.name, t]));
  const config = parseConfig({
    logLevel: 'SILENT',
    targets: targetList.map((t) => ({ name: t.name, url: `http://${t.name}.invalid/mcp` })),
    ...options.config,
  });
  const box = SealedBox.fromSecrets({ current: SECRET });
  // `now` alone: a clock that reads the test's time, on Node's timers.
  const clock = options.clock ?? (options.now ? { ...systemClock, now: options.now } : systemClock);
  const store = options.store ?? new MemorySessionStore(clock);
  const targetsFake = fakeTargets(targets);
  const { catalog, fake } = fakeCatalog(targets);
  const deps: ModernDeps = {
    config,
    logger: QUIET,
    targets: targetsFake,
    catalog,
    serverInfo: SERVER_INFO,
    keepAliveMs: 15_000,
    clock,
    activeCalls: new ActiveCalls(),
    requestState: new RequestStateSealer(box, config.requestStateTtlSeconds, clock),
    taskIds: new TaskIdSealer(box, config.taskIdMaxTtlSeconds, clock),
    listens: new ListenPlaces(config.maxListensPerPrincipal),
    legacySessions: new LegacySessionPool(targetsFake, QUIET, clock),
    bridgeStore: store,
  };
  return { deps, targets, store, catalog: fake, config };
}

/** A 2026-07-28 caller as the modern path builds one (modern/modern-path.ts). */
export function modernCaller(deps: ModernDeps, principal = 'alice', capabilities = {}): Caller {
  return {
    identity: ANONYMOUS_IDENTITY,
    era: 'modern',
    protocolVersion: '2026-07-28',
    capabilities,
    inputCapable: true,
    sessions: deps.legacySessions.slotsFor(principal, capabilities),
  };
}

/**
 * Runs jest's fake timers (installed with `jest.useFakeTimers(FAKE_TIMERS)`) in 10 ms steps, the event
 * loop turning between them, until `promise` settles: for the bridge's waits (a retry's claim, its
 * polls) in tests whose gateway runs on Node's clock, which jest fakes (`FakeClock.advanceUntil` does the
 * same for a FakeClock). Gives up after `maxMs` of fake time.
 */
export const FAKE_TIMERS: { doNotFake: Array<'setImmediate' | 'nextTick' | 'queueMicrotask'> } = {
  doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'],
};

export async function settledOnFakeTimers<T>(promise: Promise<T>, maxMs = 600_000): Promise<T> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let elapsed = 0; elapsed < maxMs && !done; elapsed += 10) {
    await new Promise((resolve) => setImmediate(resolve));
    await jest.advanceTimersByTimeAsync(10);
  }
  return promise;
}

/** Lets the event loop turn until `ready()` holds (work started with setImmediate, the memory store's promises). */
export async function turnsUntil(ready: () => boolean, maxTurns = 200): Promise<void> {
  for (let turn = 0; turn < maxTurns && !ready(); turn++) await new Promise((resolve) => setImmediate(resolve));
  if (!ready()) throw new Error('not ready after the event loop turned');
}

/** The GatewayError a promise is refused with (fails the test when it resolves, or fails otherwise). */
export async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}
