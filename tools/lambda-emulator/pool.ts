import type { ServerResponse } from 'node:http';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { type EnvironmentSpec, type EnvironmentState, ExecutionEnvironment } from './environment';

/** How long a busy environment may take to end its invocation's calls on shutdown (SIGTERM → SIGKILL). */
const SHUTDOWN_GRACE_MS = 2000;
/** How long an invocation waits for an environment that is finishing rather than start a new one. */
const REUSE_WAIT_MS = 100;

export interface PoolOptions {
  /** Everything but the id of each environment. */
  spec: Omit<EnvironmentSpec, 'id'>;
  /** A frozen environment unused this long is shut down. */
  idleMs: number;
  /** At most this many environments at once; a request beyond gets 429 (Lambda's throttle). Default: no limit. */
  maxEnvironments?: number;
}

export interface EnvironmentInfo {
  id: number;
  pid?: number;
  state: EnvironmentState;
  invocations: number;
  initMs: number;
  /** Its Runtime API, `host:port` (what a function must never be made to call itself). */
  runtimeApi: string;
}

export interface LambdaModeStats {
  /** Environments started because none was free. */
  coldStarts: number;
  /** Invocations handed to an environment. */
  invocations: number;
  /** Times an environment was frozen at the end of an invocation. */
  freezes: number;
  timeouts: number;
  /** Invocations that ended with a handler error or a crashed runtime. */
  errors: number;
  /** Requests refused with 429 (maxEnvironments reached). */
  throttles: number;
  /** Environments shut down after idling for `idleMs`. */
  reaped: number;
  /** Live environments (initializing, busy or frozen). */
  environments: number;
  /** How long each invocation ran (ms, in the order they ended): what a deployment would bill. */
  invocationMs: number[];
  /** The longest of them (0 before any): a call that waited for a person without holding one stays short. */
  longestInvocationMs: number;
  detail: EnvironmentInfo[];
}

/**
 * Lambda's scaling: an invocation goes to a frozen (warm) environment when one is free, the most
 * recently used first, else a new environment starts (a cold start). Each environment runs one
 * invocation at a time. Frozen environments idle for too long are shut down.
 */
export class EnvironmentPool {
  private readonly live = new Set<ExecutionEnvironment>();
  private readonly starting = new Set<Promise<unknown>>();
  private readonly warm: ExecutionEnvironment[] = [];
  private readonly waiters: Array<{ take(environment?: ExecutionEnvironment): void; timer: NodeJS.Timeout }> = [];
  private nextId = 1;
  private closed = false;
  private readonly invocationMs: number[] = [];
  private readonly reaper: NodeJS.Timeout;
  private readonly counts = {
    coldStarts: 0,
    invocations: 0,
    timeouts: 0,
    errors: 0,
    throttles: 0,
    reaped: 0,
    freezesOfGone: 0,
  };

  constructor(private readonly options: PoolOptions) {
    this.reaper = setInterval(() => this.reap(), Math.min(Math.max(options.idleMs / 4, 50), 30_000)).unref();
  }

  /** Runs one invocation, streaming its response to `res`. */
  async invoke(event: LambdaFunctionURLEvent, res: ServerResponse): Promise<void> {
    if (this.closed) throw new Error('the local Lambda runtime is shut down');
    const environment = await this.acquire();
    if (!environment) {
      this.counts.throttles++;
      res.writeHead(429, { 'content-type': 'application/json' }).end('{"Message":"Rate Exceeded."}');
      return;
    }
    this.counts.invocations++;
    const started = Date.now();
    const outcome = await environment.invoke(event, res);
    this.invocationMs.push(Date.now() - started);
    if (outcome === 'timeout') this.counts.timeouts++;
    else if (outcome !== 'success') this.counts.errors++;
    if (environment.state === 'frozen' && !this.closed) this.release(environment);
    else if (environment.state !== 'frozen') this.forget(environment);
  }

  /**
   * The environment that has just sent its response and is about to freeze, else a warm (frozen)
   * one, most recently used first, else a new one. Waiting for the finishing one stands in for the
   * network: a real client's next request takes a round trip, by which time that environment is
   * frozen and first in line; locally the request would arrive first and go to another environment
   * or cause a cold start that Lambda would not have. Undefined when `maxEnvironments` forbids a new one.
   */
  private async acquire(): Promise<ExecutionEnvironment | undefined> {
    const finishing = [...this.live].filter((environment) => environment.finishing).length;
    if (finishing > this.waiters.length) {
      const reused = await new Promise<ExecutionEnvironment | undefined>((take) => {
        const waiter = {
          take,
          timer: setTimeout(() => {
            this.waiters.splice(this.waiters.indexOf(waiter), 1);
            take(undefined);
          }, REUSE_WAIT_MS),
        };
        this.waiters.push(waiter);
      });
      if (reused) return reused;
      if (this.closed) throw new Error('the local Lambda runtime is shut down');
    }
    for (let warm = this.warm.pop(); warm; warm = this.warm.pop()) {
      if (warm.state === 'frozen') return warm;
      this.forget(warm); // its process died while frozen (killed from outside)
    }
    const { maxEnvironments } = this.options;
    if (maxEnvironments !== undefined && this.live.size + this.starting.size >= maxEnvironments) return undefined;
    return this.start();
  }

  /** A frozen environment goes to a waiting invocation, else back to the warm ones. */
  private release(environment: ExecutionEnvironment): void {
    const waiter = this.waiters.shift();
    if (!waiter) {
      this.warm.push(environment);
      return;
    }
    clearTimeout(waiter.timer);
    waiter.take(environment);
  }

  private async start(): Promise<ExecutionEnvironment> {
    this.counts.coldStarts++;
    const starting = ExecutionEnvironment.start({ ...this.options.spec, id: this.nextId++ });
    this.starting.add(starting);
    try {
      const environment = await starting;
      if (this.closed) {
        await environment.kill();
        throw new Error('the local Lambda runtime is shut down');
      }
      this.live.add(environment);
      return environment;
    } finally {
      this.starting.delete(starting);
    }
  }

  private forget(environment: ExecutionEnvironment): void {
    if (!this.live.delete(environment)) return;
    this.counts.freezesOfGone += environment.freezes;
    const at = this.warm.indexOf(environment);
    if (at >= 0) this.warm.splice(at, 1);
  }

  private reap(): void {
    const now = Date.now();
    for (const environment of [...this.warm]) {
      if (now - environment.idleSince < this.options.idleMs) continue;
      this.forget(environment);
      this.counts.reaped++;
      void environment.kill();
    }
    for (const environment of [...this.live]) if (environment.state === 'dead') this.forget(environment);
  }

  stats(): LambdaModeStats {
    const environments = [...this.live].filter((environment) => environment.state !== 'dead');
    const { freezesOfGone, ...counts } = this.counts;
    return {
      ...counts,
      freezes: freezesOfGone + [...this.live].reduce((sum, environment) => sum + environment.freezes, 0),
      environments: environments.length,
      invocationMs: [...this.invocationMs],
      longestInvocationMs: Math.max(0, ...this.invocationMs),
      detail: environments.map((environment) => ({
        id: environment.id,
        pid: environment.pid,
        state: environment.state,
        invocations: environment.invocations,
        initMs: environment.initMs,
        runtimeApi: environment.runtimeApi,
      })),
    };
  }

  /**
   * Kills every environment. Busy ones get SIGTERM first and up to SHUTDOWN_GRACE_MS to finish what
   * their invocation holds (the gateway ends its calls with an error and removes their records).
   */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reaper);
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.take(undefined);
    }
    await Promise.allSettled([...this.starting]);
    const all = [...this.live];
    this.live.clear();
    this.warm.length = 0;
    await Promise.all(
      all.map((environment) =>
        environment.state === 'busy' ? environment.terminate(SHUTDOWN_GRACE_MS) : environment.kill(),
      ),
    );
  }
}
