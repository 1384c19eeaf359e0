import { ActiveCalls } from '../../lambda/calls/active-calls';
import type { Catalog } from '../../lambda/catalog/catalog';
import { type GatewayConfigInput, parseConfig } from '../../lambda/config/schema';
import { SealedBox } from '../../lambda/crypto/sealed-box';
import { TaskIdSealer } from '../../lambda/crypto/task-ids';
import type { ExchangeContext } from '../../lambda/http/exchange';
import type { LegacyDeps } from '../../lambda/legacy/deps';
import type { GatewayLogger } from '../../lambda/observability/logger';
import type { JSONRPCResponse } from '../../lambda/protocol/jsonrpc';
import type { JSONRPCMessage, JSONRPCNotification, JSONRPCRequest } from '../../lambda/protocol/types';
import { type Clock, systemClock } from '../../lambda/scheduling/clock';
import type { LoadedSession, SessionRecord, TargetSessionRecord } from '../../lambda/state/store';
import type { LegacySession } from '../../lambda/targets/legacy-client';
import type { SessionStreamHandle, SessionStreamListener } from '../../lambda/targets/standalone-streams';
import type { Caller, TargetCallOptions, TargetCallRequest, TargetLink } from '../../lambda/targets/target-link';
import type { Targets } from '../../lambda/targets/targets';
import { MemorySessionStore } from './memory-store';

/**
 * The legacy path's deps for unit tests (test/unit/legacy/): the memory store, a logger that keeps
 * what it was told, scripted targets (no endpoint, no socket) and a catalog that resolves every name to
 * one target. Each part records what the module under test asked of it, so a test can count it.
 */

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  extra?: object;
}

/** A logger that keeps every line (a test reads what was warned). */
export function recordingLogger(): GatewayLogger & { lines: LogLine[]; messages(level: LogLine['level']): string[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (message: unknown, extra?: unknown): void => {
      lines.push({ level, message: String(message), extra: extra as object | undefined });
    };
  return {
    lines,
    messages: (level) => lines.filter((l) => l.level === level).map((l) => l.message),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  } as GatewayLogger & { lines: LogLine[]; messages(level: LogLine['level']): string[] };
}

/** What a scripted target does with one call: its response, after whatever it sends on the way. */
export type TargetScript = (request: TargetCallRequest, options: TargetCallOptions) => Promise<JSONRPCResponse>;

/** A target link whose calls follow a script; what the gateway replied to it and notified it is kept. */
export class ScriptedLink implements TargetLink {
  readonly calls: Array<{ request: TargetCallRequest; options: TargetCallOptions }> = [];
  readonly replies: JSONRPCResponse[] = [];
  readonly notified: JSONRPCNotification[] = [];
  session?: LegacySession;

  constructor(
    readonly target: string,
    public script: TargetScript,
    readonly era: 'legacy' | 'modern' = 'legacy',
    public capabilities: Record<string, unknown> | undefined = undefined,
  ) {
    if (era === 'legacy') this.session = { targetSessionId: `${target}-session`, protocolVersion: '2025-11-25' };
  }

  call(request: TargetCallRequest, options: TargetCallOptions): Promise<JSONRPCResponse> {
    this.calls.push({ request, options });
    return this.script(request, options);
  }

  async reply(message: JSONRPCResponse): Promise<void> {
    this.replies.push(message);
  }

  async notify(notification: JSONRPCNotification): Promise<void> {
    this.notified.push(notification);
  }

  async serverCapabilities(): Promise<Record<string, unknown> | undefined> {
    return this.capabilities;
  }
}

/** A target session's GET stream as a client stream listens to it: the test sends on it. */
export interface ListenedStream {
  target: string;
  session: LegacySession;
  listener: SessionStreamListener;
  lastEventIdGiven?: string;
  lastEventId?: string;
  closed: boolean;
}

export interface FakeTargets {
  /** The object the legacy path holds as `deps.targets`. */
  targets: Targets;
  links: Map<string, ScriptedLink>;
  opened: Array<{ name: string; caller: Caller }>;
  delivered: Array<{ target: string; session: LegacySession; message: JSONRPCMessage }>;
  terminated: Array<{ target: string; session: LegacySession }>;
  listened: ListenedStream[];
  /** Makes `deliver` fail (a target that cannot be reached). */
  failDeliver?: Error;
}

/**
 * Targets by name, each a ScriptedLink (default: answers every call with an empty result). A stand-in
 * for `Targets` (a class over real endpoints): only what the legacy path calls on it is here.
 */
export function fakeTargets(names: string[], scripts: Record<string, TargetScript> = {}): FakeTargets {
  const fake: FakeTargets = {
    targets: undefined as unknown as Targets,
    links: new Map(),
    opened: [],
    delivered: [],
    terminated: [],
    listened: [],
  };
  for (const name of names) {
    const script: TargetScript =
      scripts[name] ?? (async (request) => ({ jsonrpc: '2.0', id: request.id ?? 0, result: {} }));
    fake.links.set(name, new ScriptedLink(name, script));
  }
  const streams = {
    listen: async (
      client: { name: string },
      session: LegacySession,
      listener: SessionStreamListener,
      options: { lastEventId?: string } = {},
    ): Promise<SessionStreamHandle> => {
      const listened: ListenedStream = {
        target: client.name,
        session,
        listener,
        lastEventIdGiven: options.lastEventId,
        lastEventId: options.lastEventId,
        closed: false,
      };
      fake.listened.push(listened);
      return {
        lastEventId: () => listened.lastEventId,
        close: () => {
          listened.closed = true;
        },
      };
    },
  };
  const targets = {
    names,
    connections: undefined,
    streams,
    has: (name: string) => fake.links.has(name),
    legacyClient: (name: string) => (fake.links.has(name) ? { name } : undefined),
    open: async (name: string, caller: Caller) => {
      const link = fake.links.get(name);
      if (!link) throw new Error(`no target ${name}`);
      fake.opened.push({ name, caller });
      return link;
    },
    deliver: async (target: string, session: LegacySession, message: JSONRPCMessage) => {
      if (fake.failDeliver) throw fake.failDeliver;
      fake.delivered.push({ target, session, message });
    },
    terminate: async (target: string, session: LegacySession) => {
      fake.terminated.push({ target, session });
    },
  };
  // Only the members above are used by the legacy path's modules under test.
  fake.targets = targets as unknown as Targets;
  return fake;
}

/** A catalog that resolves every name and URI to `target`, and keeps the notifications it was told of. */
export function fakeCatalog(target = 'demo') {
  const noticed: Array<{ target: string; method: string }> = [];
  const aggregated: string[] = [];
  const catalog = {
    noticed: (name: string, notification: { method: string }) =>
      noticed.push({ target: name, method: notification.method }),
    aggregate: async (kind: string) => {
      aggregated.push(kind);
      return { items: [{ name: `${kind}-item` }] };
    },
    resolveNamed: async (name: unknown) => ({ target, name: String(name).replace(/^[a-z]+___/, '') }),
    // No policies: every resolved call may go (policy's own tests use the real catalog).
    authorizeCall: () => undefined,
    resolveResource: async () => target,
    resolveTemplate: async () => target,
  };
  // Only the members above are used by the legacy path.
  return { catalog: catalog as unknown as Catalog, noticed, aggregated };
}

export const SECRET = 'a secret of at least thirty-two characters';

export function taskIdSealer(clock: Clock = systemClock): TaskIdSealer {
  return new TaskIdSealer(SealedBox.fromSecrets({ current: SECRET }), 86_400, clock);
}

export interface LegacyTestDeps {
  deps: LegacyDeps;
  store: MemorySessionStore;
  logger: ReturnType<typeof recordingLogger>;
  fake: FakeTargets;
  noticed: Array<{ target: string; method: string }>;
  aggregated: string[];
}

/** The deps of the legacy path over the memory store, with scripted targets named in `config.targets`. */
export function legacyDeps(
  config: GatewayConfigInput = {},
  options: { scripts?: Record<string, TargetScript>; clock?: Clock; store?: MemorySessionStore } = {},
): LegacyTestDeps {
  const parsed = parseConfig({
    logLevel: 'SILENT',
    targets: [{ name: 'demo', url: 'https://demo.invalid/mcp' }],
    ...config,
  });
  const clock = options.clock ?? systemClock;
  const store = options.store ?? new MemorySessionStore(clock);
  const logger = recordingLogger();
  const fake = fakeTargets(
    parsed.targets.map((t) => t.name),
    options.scripts,
  );
  const { catalog, noticed, aggregated } = fakeCatalog(parsed.targets[0]?.name);
  const deps: LegacyDeps = {
    config: parsed,
    logger,
    targets: fake.targets,
    catalog,
    serverInfo: { name: 'mcp-gateway', version: 'test' },
    keepAliveMs: 600_000,
    clock,
    activeCalls: new ActiveCalls(),
    store,
    streamPollMs: { minMs: 10, maxMs: 40 },
    taskIds: taskIdSealer(clock),
  };
  return { deps, store, logger, fake, noticed, aggregated };
}

let sessions = 0;

/** A live 2025-11-25 session of `alice`, stored, with `change` applied. */
export async function storedSession(
  store: MemorySessionStore,
  change: Partial<SessionRecord> = {},
  targets: TargetSessionRecord[] = [],
): Promise<LoadedSession> {
  const now = Math.floor(Date.now() / 1000);
  const session: SessionRecord = {
    id: `session-${++sessions}-${Math.random().toString(36).slice(2, 10)}`,
    principal: 'alice',
    protocolVersion: '2025-11-25',
    clientCapabilities: { elicitation: { form: {} } },
    clientInfo: { name: 'unit-client', version: '1.0.0' },
    createdAt: now,
    expiresAt: now + 3600,
    ...change,
  };
  await store.createSession(session);
  for (const target of targets) await store.putTargetSession(session, target);
  const loaded = await store.loadSession(session.id, undefined, { withPending: true, includeExpired: true });
  if (!loaded) throw new Error('the session was not stored');
  return loaded;
}

/** The target-session record of `target` as a call of the session keeps it. */
export function targetSession(target: string, change: Partial<TargetSessionRecord> = {}): TargetSessionRecord {
  return {
    target,
    targetSessionId: `${target}-session`,
    protocolVersion: '2025-11-25',
    declaredCapabilities: {},
    ...change,
  };
}

/** An exchange whose client is still there, with `deadlineMs` left. */
export function exchange(deadlineMs = 30_000, now = Date.now()): ExchangeContext & { abort(): void } {
  const controller = new AbortController();
  return { signal: controller.signal, deadline: now + deadlineMs, abort: () => controller.abort() };
}

/** A client request of the session. */
export function request(id: string | number, method: string, params: Record<string, unknown> = {}): JSONRPCRequest {
  return { jsonrpc: '2.0', id, method, params };
}
