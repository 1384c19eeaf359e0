import { type LocalGatewayOptions, startLocalGateway } from '../../dev/local-gateway';
import type { GatewayConfigInput } from '../../lambda/config/schema';
import { type CountedDynamo, startCountedDynamo } from './dynamo';
import { type GatewayKind, type GatewayUnderTest, startGateway } from './gateways';
import { unreachableDynamo } from './unreachable-dynamo';

/**
 * One fixture for the set-up every integration suite needs: DynamoDB (dynalite behind the counting
 * proxy), the suite's targets (real MCP servers on loopback), one or more gateways of a kind on that
 * DynamoDB, and the teardown of all of it. Called in a `describe` (or at file level), it registers
 * `beforeAll`/`afterAll` there and returns getters that are valid inside tests and hooks.
 *
 * Gateways are started through `startGateway` (test/support/gateways.ts), so a new kind there needs no
 * change here nor in the suites.
 *
 * @example
 * describe.each(kinds)('relay through the %s', (kind) => {
 *   const gw = withGateway({ logLevel: 'SILENT' }, { kind, targets: { demo: () => startDemoTarget() } });
 *   it('…', async () => { await initSession(gw.url); gw.targets.demo.stats(); gw.dynamo.counts; });
 * });
 */

/** A target the fixture starts before the gateway and closes after it. */
export interface StartedTarget {
  url: string;
  close(): Promise<void>;
}

/**
 * Per name: a function starting the target (the fixture closes it; it gets the targets started before
 * it, e.g. to put a proxy in front of one), or the URL of a target the fixture does not own.
 */
export type TargetSpecs = Record<string, ((earlier: EarlierTargets) => Promise<StartedTarget>) | string>;

/** The targets started before this one, by name (annotate the parameter: its type cannot be inferred). */
export type EarlierTargets = Record<string, { url: string }>;

export type StartedTargets<T extends TargetSpecs> = {
  [K in keyof T]: T[K] extends (...args: never[]) => Promise<infer S> ? S : { url: string };
};

/** A configuration, or one built from the started targets (then its `targets` are used as written). */
export type ConfigSpec<T extends TargetSpecs> =
  | GatewayConfigInput
  | ((targets: StartedTargets<T>) => GatewayConfigInput);

/** Nothing listens on port 9: a gateway that needs no DynamoDB (the 2026-07-28 path) must not call it. */
/** A port nothing listens on; the fixture's `unreachable` DynamoDB is ./unreachable-dynamo.ts instead. */
export const UNREACHABLE_DYNAMODB = 'http://127.0.0.1:9';

export interface GatewayStartOptions {
  /** SSE keep-alive interval. */
  keepAliveMs?: number;
  /** Function timeout (Lambda kinds) or request timeout (local server). */
  timeoutMs?: number;
  /** More function environment variables (the `lambda runtime` kind only, e.g. GATEWAY_HOLDER_LEASE_MS). */
  environment?: Record<string, string>;
  /**
   * What only the local server takes: it is built in this process from options, while the Lambda kinds
   * read their configuration from the environment as in AWS (and log at `config.logLevel`).
   */
  localServer?: Pick<LocalGatewayOptions, 'logger' | 'auth' | 'clock'>;
}

export interface WithGatewayOptions<T extends TargetSpecs> extends GatewayStartOptions {
  /** Default: the local server. */
  kind?: GatewayKind;
  /** Started in this order; with a configuration object each becomes `{ name, url }` ahead of `config.targets`. */
  targets?: T;
  /** Gateways sharing the DynamoDB, like Lambda instances of one deployment (default 1; 0: tests start them). */
  instances?: number;
  /**
   * `counted` (default): a fresh dynalite behind the counting proxy; `unreachable`: no DynamoDB, for the
   * 2026-07-28 path (not the `lambda handler` kind, which makes its table before it starts).
   */
  dynamo?: 'counted' | 'unreachable';
}

export interface GatewayFixture<T extends TargetSpecs> {
  readonly kind: GatewayKind;
  /** The MCP endpoint of the first gateway. */
  readonly url: string;
  /** Every gateway started with the fixture, in order. */
  readonly instances: GatewayUnderTest[];
  readonly dynamo: CountedDynamo;
  readonly dynamodbEndpoint: string;
  readonly targets: StartedTargets<T>;
  /** The configuration the gateways were started with. */
  readonly config: GatewayConfigInput;
  /**
   * Another gateway of the same kind on the same DynamoDB: the fixture's configuration with `overrides`
   * and its start options with `options` (both shallow). Closed with the fixture unless the test closes it first.
   */
  start(overrides?: Partial<GatewayConfigInput>, options?: GatewayStartOptions): Promise<GatewayUnderTest>;
}

export function withGateway<T extends TargetSpecs = Record<never, never>>(
  config: ConfigSpec<T>,
  options: WithGatewayOptions<T> = {},
): GatewayFixture<T> {
  const kind = options.kind ?? 'local server';
  let dynamo: CountedDynamo | undefined;
  let endpoint: string | undefined;
  let targets: StartedTargets<T> | undefined;
  let resolved: GatewayConfigInput | undefined;
  const instances: GatewayUnderTest[] = [];
  const closers: Array<() => Promise<void>> = [];

  const ready = <V>(value: V | undefined, what: string): V => {
    if (value === undefined)
      throw new Error(`withGateway: ${what} is set up in beforeAll; use it inside tests or hooks`);
    return value;
  };

  const start = async (
    startConfig: GatewayConfigInput,
    startOptions: GatewayStartOptions,
  ): Promise<GatewayUnderTest> => {
    const dynamodbEndpoint = ready(endpoint, 'DynamoDB');
    // The local server's own options need it built here; everything else goes through startGateway.
    const gateway =
      kind === 'local server' && startOptions.localServer
        ? await startLocalGateway({
            port: 0,
            config: startConfig,
            dynamodbEndpoint,
            demo: false,
            startupReport: false,
            keepAliveMs: startOptions.keepAliveMs,
            requestTimeoutMs: startOptions.timeoutMs,
            ...startOptions.localServer,
          })
        : await startGateway(kind, startConfig, dynamodbEndpoint, startOptions);
    const close = once(() => gateway.close());
    closers.push(close);
    const stats = 'stats' in gateway ? gateway.stats?.bind(gateway) : undefined;
    const webFunction = 'webFunction' in gateway ? gateway.webFunction : undefined;
    return { url: gateway.url, close, stats, webFunction };
  };

  beforeAll(async () => {
    if (options.dynamo === 'unreachable') {
      endpoint = await unreachableDynamo();
    } else {
      const counted = await startCountedDynamo();
      closers.push(() => counted.close());
      dynamo = counted;
      endpoint = counted.endpoint;
    }
    const started: Record<string, StartedTarget | { url: string }> = {};
    for (const [name, spec] of Object.entries(options.targets ?? {})) {
      if (typeof spec === 'string') {
        started[name] = { url: spec };
        continue;
      }
      const target = await spec({ ...started });
      closers.push(() => target.close());
      started[name] = target;
    }
    targets = started as StartedTargets<T>;
    resolved = typeof config === 'function' ? config(targets) : withTargets(config, started);
    for (let i = 0; i < (options.instances ?? 1); i++) instances.push(await start(resolved, startOptionsOf(options)));
  });

  afterAll(async () => {
    // Gateways first (they hold connections to targets and DynamoDB), then targets, then DynamoDB.
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  });

  return {
    kind,
    get url() {
      return ready(instances[0], 'the gateway').url;
    },
    instances,
    get dynamo() {
      if (options.dynamo === 'unreachable') throw new Error('withGateway: this fixture has no DynamoDB');
      return ready(dynamo, 'DynamoDB');
    },
    get dynamodbEndpoint() {
      return ready(endpoint, 'DynamoDB');
    },
    get targets() {
      return ready(targets, 'the targets');
    },
    get config() {
      return ready(resolved, 'the configuration');
    },
    start: (overrides = {}, startOptions = {}) =>
      start({ ...ready(resolved, 'the configuration'), ...overrides }, { ...startOptionsOf(options), ...startOptions }),
  };
}

function startOptionsOf(options: GatewayStartOptions): GatewayStartOptions {
  const { keepAliveMs, timeoutMs, localServer, environment } = options;
  return { keepAliveMs, timeoutMs, localServer, environment };
}

function withTargets(config: GatewayConfigInput, started: Record<string, { url: string }>): GatewayConfigInput {
  const listed = new Set((config.targets ?? []).map((target) => target.name));
  const added = Object.entries(started)
    .filter(([name]) => !listed.has(name))
    .map(([name, target]) => ({ name, url: target.url }));
  return { ...config, targets: [...added, ...(config.targets ?? [])] };
}

function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= close();
    return closing;
  };
}
