import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import {
  Agent,
  type ClientRequest,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import { type AddressInfo, connect, createServer as createNetServer } from 'node:net';
import { dirname, resolve as resolvePath } from 'node:path';
import { createInterface } from 'node:readline';
import { orphanGuard } from '../process-guard/orphan-guard';

/**
 * A local stand-in for an AWS Lambda Web Function: the application's own HTTP server runs in each
 * execution environment (a child process bound to `AWS_LAMBDA_HTTP_ENDPOINT`), one environment serves
 * up to `maxConcurrencyPerEnvironment` requests at once, and a front end routes, times out and scales
 * environments the way the service does. See README.md for what matches the service and what does not.
 */

export interface WebFunctionEmulatorOptions {
  /** The application: a JS/MJS file run with `node` (the package's `index.js`, or its `entryPoint`). */
  entry: string;
  /** Default: the Node.js running the emulator. */
  nodeBinary?: string;
  /** The function's environment variables. */
  env?: Record<string, string>;
  /** The front end's address; default 127.0.0.1 and a free port. */
  host?: string;
  port?: number;
  /** 1–128; default 64 (the service's default). */
  maxConcurrencyPerEnvironment?: number;
  /** Per request, from when it is forwarded; default 30. Fractions allowed (tests). */
  timeoutSeconds?: number;
  /** An environment with no open request this long gets SIGTERM; default 300. */
  idleSeconds?: number;
  /** SIGTERM → SIGKILL; default 1000. */
  shutdownGraceMs?: number;
  /** At most this many environments at once; a request needing another gets 429. Default: no limit. */
  maxEnvironments?: number;
  /** The largest request body let in; more gets 413. Default 6 MB (6291456 bytes), Lambda's request payload limit. */
  maxRequestBytes?: number;
  /** An environment whose server does not accept connections within this is killed; default 10 000. */
  initTimeoutMs?: number;
  /** Each environment's stdout/stderr line, prefixed `[env N]`; default: the emulator's stderr. */
  log?: (line: string) => void;
}

export type WebFunctionEnvironmentState = 'initializing' | 'ready' | 'draining';

export interface WebFunctionEnvironmentInfo {
  id: number;
  pid: number | undefined;
  state: WebFunctionEnvironmentState;
  /** `127.0.0.1:port`, what its `AWS_LAMBDA_HTTP_ENDPOINT` says. */
  endpoint: string | undefined;
  /** Requests routed to it and not over yet (queued during init or forwarded). */
  open: number;
  /** Requests forwarded to it so far. */
  served: number;
  /** The highest `open` it had. */
  maxOpen: number;
  /** Spawn to first accepted connection; undefined while initializing. */
  initMs: number | undefined;
}

export interface WebFunctionStats {
  /** Cold starts: every environment spawned. */
  environmentsStarted: number;
  /** Environments whose process has not exited (initializing, ready or draining). */
  environmentsLive: number;
  /** Each environment's init time (ms from spawn to ready), in the order they became ready. */
  initTimesMs: number[];
  /** Requests routed to an environment (throttled ones not included). */
  requests: number;
  /** The highest open-request count seen in any one environment. */
  maxOpenPerEnvironment: number;
  /** Requests cut at `timeoutSeconds`. */
  timedOut: number;
  /** Environments sent SIGTERM (scale-in). */
  sigterms: number;
  /** Environments sent SIGKILL: still alive after the grace, or not ready within `initTimeoutMs`. */
  kills: number;
  /** Requests answered 429 (`maxEnvironments` reached). */
  throttled: number;
  /** Requests answered 413 (a body over `maxRequestBytes`). */
  tooLarge: number;
}

export interface WebFunctionEmulator {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** Kills every environment and closes the front end. */
  close(): Promise<void>;
  stats(): WebFunctionStats;
  /** SIGTERM to every idle ready environment now; resolves once they have exited. */
  scaleIn(): Promise<void>;
  /** The live environments, oldest first. */
  environments(): WebFunctionEnvironmentInfo[];
}

const POLL_MS = 20;
/** Lambda's limit on a request payload. */
const MAX_REQUEST_BYTES = 6 * 1024 * 1024;
/** How long a refused request's connection is kept for its client to read the 413 and leave. */
const REFUSED_LINGER_MS = 5000;
/** After an environment exits, how long its forwarded requests get to see their sockets end by themselves. */
const EXIT_SETTLE_MS = 500;
const BAD_GATEWAY = '{"Message":"Bad Gateway","Type":"ServiceException"}';
/** How long the front keeps an idle client connection (see the server below). */
const FRONT_KEEP_ALIVE_MS = 75_000;
const THROTTLED =
  '{"Message":"Rate Exceeded.","Type":"TooManyRequestsException","Reason":"ConcurrentInvocationLimitExceeded"}';
/** They describe one connection, not the message: never forwarded either way. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  // The front end has answered it already (the body is buffered).
  'expect',
  // Recomputed from the buffered body, or passed through with the response it describes.
  'content-length',
]);

interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly body: Buffer;
  readonly environment: Environment;
  upstream?: ClientRequest;
  timer?: NodeJS.Timeout;
  /** The client's response is closed (ended, cut or abandoned). */
  over: boolean;
}

class Environment {
  state: WebFunctionEnvironmentState = 'initializing';
  child?: ChildProcess;
  port?: number;
  initMs?: number;
  served = 0;
  maxOpen = 0;
  alive = true;
  idleTimer?: NodeJS.Timeout;
  graceTimer?: NodeJS.Timeout;
  /** Open requests: queued (no `upstream` yet) or forwarded. */
  readonly exchanges = new Set<Exchange>();
  readonly agent = new Agent({ keepAlive: true });
  readonly exited: Promise<void>;
  markExited!: () => void;

  constructor(readonly id: number) {
    this.exited = new Promise((resolve) => {
      this.markExited = resolve;
    });
  }

  info(): WebFunctionEnvironmentInfo {
    return {
      id: this.id,
      pid: this.child?.pid,
      state: this.state,
      endpoint: this.port === undefined ? undefined : `127.0.0.1:${this.port}`,
      open: this.exchanges.size,
      served: this.served,
      maxOpen: this.maxOpen,
      initMs: this.initMs,
    };
  }
}

export async function startWebFunctionEmulator(options: WebFunctionEmulatorOptions): Promise<WebFunctionEmulator> {
  const cap = options.maxConcurrencyPerEnvironment ?? 64;
  if (!Number.isInteger(cap) || cap < 1 || cap > 128) {
    throw new RangeError(`maxConcurrencyPerEnvironment must be an integer 1–128, not ${cap}`);
  }
  const timeoutSeconds = options.timeoutSeconds ?? 30;
  // The service allows 3–900 s; shorter ones are let through so tests need not wait seconds.
  if (!(timeoutSeconds > 0 && timeoutSeconds <= 900)) {
    throw new RangeError(`timeoutSeconds must be in (0, 900], not ${timeoutSeconds}`);
  }
  const timeoutMs = timeoutSeconds * 1000;
  const idleMs = (options.idleSeconds ?? 300) * 1000;
  const graceMs = options.shutdownGraceMs ?? 1000;
  const initTimeoutMs = options.initTimeoutMs ?? 10_000;
  const maxEnvironments = options.maxEnvironments ?? Number.POSITIVE_INFINITY;
  const maxRequestBytes = options.maxRequestBytes ?? MAX_REQUEST_BYTES;
  if (!Number.isInteger(maxRequestBytes) || maxRequestBytes < 0) {
    throw new RangeError(`maxRequestBytes must be a non-negative integer, not ${maxRequestBytes}`);
  }
  const tooLargeBody = `{"Message":"Request must be smaller than ${maxRequestBytes} bytes"}`;
  const entry = resolvePath(options.entry);
  const nodeBinary = options.nodeBinary ?? process.execPath;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));

  /** Insertion order is age order: routing's ties go to the oldest. */
  const live = new Set<Environment>();
  const initTimesMs: number[] = [];
  const counts = {
    environmentsStarted: 0,
    requests: 0,
    maxOpenPerEnvironment: 0,
    timedOut: 0,
    sigterms: 0,
    kills: 0,
    throttled: 0,
    tooLarge: 0,
  };
  let nextId = 1;
  let closed = false;

  const server: Server = createServer((req, res) => {
    handle(req, res, false).catch(() => answer(res, 502, BAD_GATEWAY));
  });
  // A front end keeps idle connections long (a function URL's is not documented; a load balancer's is
  // 60 s): clients let go first. Node's 5 s default makes a busy client's reused connection fail.
  server.keepAliveTimeout = FRONT_KEEP_ALIVE_MS;
  server.headersTimeout = FRONT_KEEP_ALIVE_MS + 1000;
  // `Expect: 100-continue`: a body declared too large is refused before the client sends it.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res, true).catch(() => answer(res, 502, BAD_GATEWAY));
  });

  async function handle(req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): Promise<void> {
    if (closed) return answer(res, 503, '{"Message":"Service Unavailable"}');
    if (Number(req.headers['content-length'] ?? 0) > maxRequestBytes) return refuseTooLarge(req, res);
    if (expectsContinue) res.writeContinue();
    // Half-duplex: the environment gets nothing before the whole body is in.
    const body = await readBody(req, maxRequestBytes);
    if (body === 'too large') return refuseTooLarge(req, res);
    if (body === undefined || res.destroyed) return;
    const environment = route();
    if (!environment) {
      counts.throttled++;
      return answer(res, 429, THROTTLED);
    }
    counts.requests++;
    const exchange: Exchange = { req, res, body, environment, over: false };
    environment.exchanges.add(exchange);
    environment.maxOpen = Math.max(environment.maxOpen, environment.exchanges.size);
    counts.maxOpenPerEnvironment = Math.max(counts.maxOpenPerEnvironment, environment.exchanges.size);
    clearTimeout(environment.idleTimer);
    res.on('close', () => finish(exchange));
    // A queued request is forwarded when its environment becomes ready (boot).
    if (environment.state === 'ready') forward(exchange);
  }

  /**
   * 413 at once, and no more of the body read: the request is paused (the socket with it, once its small
   * buffer is full), so the client's sending stalls instead of the front end taking it in. The response
   * is written whole but not ended: ending it would close the connection with the client's bytes unread,
   * and a client still sending would then meet a reset before it read the 413. The connection closes
   * when the client leaves (`Connection: close` asks it to), else after `REFUSED_LINGER_MS`.
   */
  function refuseTooLarge(req: IncomingMessage, res: ServerResponse): void {
    counts.tooLarge++;
    req.pause();
    if (res.destroyed) return;
    res.writeHead(413, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(tooLargeBody),
      connection: 'close',
    });
    res.write(tooLargeBody);
    const linger = setTimeout(() => res.destroy(), REFUSED_LINGER_MS).unref();
    res.on('close', () => clearTimeout(linger));
  }

  /**
   * The ready environment with the fewest open requests below the cap (ties: the oldest), else one
   * still initializing with room, else a new one: requests arriving during a cold start wait for it
   * rather than each starting its own. Undefined when `maxEnvironments` forbids a new one.
   */
  function route(): Environment | undefined {
    let best: Environment | undefined;
    for (const environment of live) {
      if (environment.state !== 'ready' || environment.exchanges.size >= cap) continue;
      if (!best || environment.exchanges.size < best.exchanges.size) best = environment;
    }
    if (best) return best;
    for (const environment of live) {
      if (environment.state === 'initializing' && environment.exchanges.size < cap) return environment;
    }
    if (live.size >= maxEnvironments) return undefined;
    const environment = new Environment(nextId++);
    live.add(environment);
    counts.environmentsStarted++;
    void boot(environment);
    return environment;
  }

  async function boot(environment: Environment): Promise<void> {
    try {
      const port = await freePort();
      if (closed) throw new Error('closed');
      environment.port = port;
      const spawnedAt = performance.now();
      const child = spawn(nodeBinary, [entry], {
        cwd: dirname(entry),
        // Not the emulator's own environment: the function sees what Lambda would give it plus its own.
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          TZ: ':UTC',
          ...options.env,
          AWS_LAMBDA_HTTP_ENDPOINT: `127.0.0.1:${port}`,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      environment.child = child;
      // Killed with the emulator even when it is killed outright (SIGKILL), or it would serve on.
      const { pid } = child;
      if (pid !== undefined) {
        orphanGuard.watch(pid);
        child.once('exit', () => orphanGuard.forget(pid));
      }
      for (const stream of [child.stdout, child.stderr]) {
        if (stream) createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', forwardLog);
      }
      child.once('error', () => gone(environment));
      child.once('exit', () => gone(environment));
      await waitForListener(environment, port, spawnedAt + initTimeoutMs);
      environment.initMs = Math.round(performance.now() - spawnedAt);
      initTimesMs.push(environment.initMs);
      environment.state = 'ready';
      for (const exchange of environment.exchanges) forward(exchange);
      if (environment.exchanges.size === 0) scheduleIdle(environment);
    } catch {
      if (environment.alive && environment.child && environment.child.exitCode === null) {
        if (!closed) counts.kills++;
        environment.state = 'draining';
        environment.child.kill('SIGKILL');
      } else if (!environment.child) {
        gone(environment);
      }
      for (const exchange of environment.exchanges) if (!exchange.upstream) fail(exchange);
    }

    function forwardLog(line: string): void {
      log(`[env ${environment.id}] ${line}`);
    }
  }

  /** The runtime's readiness check: a TCP connect to the endpoint succeeds. */
  async function waitForListener(environment: Environment, port: number, deadline: number): Promise<void> {
    while (environment.alive && !closed) {
      if (await accepts(port)) return;
      if (performance.now() >= deadline) throw new Error(`environment ${environment.id}: no listener on ${port}`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    throw new Error(`environment ${environment.id} exited during init`);
  }

  function forward(exchange: Exchange): void {
    const { req, res, body, environment } = exchange;
    if (exchange.over) return;
    environment.served++;
    const upstream = httpRequest({
      host: '127.0.0.1',
      port: environment.port,
      method: req.method,
      path: req.url,
      headers: requestHeaders(req.headers, body.length),
      agent: environment.agent,
    });
    exchange.upstream = upstream;
    exchange.timer = setTimeout(() => {
      counts.timedOut++;
      // res first: fail() sees a destroyed response and leaves it.
      res.destroy();
      upstream.destroy();
    }, timeoutMs);
    upstream.on('response', (response) => {
      response.on('error', () => undefined); // the 'close' below handles a cut response
      if (exchange.over) {
        response.destroy();
        return;
      }
      res.writeHead(response.statusCode ?? 502, response.statusMessage, responseHeaders(response.rawHeaders));
      // The client sees the status and headers now, not with the first body chunk.
      res.flushHeaders();
      // pipe() writes each chunk as it arrives and pauses the environment's side while the client lags.
      response.pipe(res);
      response.on('close', () => {
        if (!response.complete) res.destroy();
      });
    });
    upstream.on('error', () => fail(exchange));
    upstream.end(body);
  }

  /** 502 while nothing was sent, else the client's connection ends. */
  function fail(exchange: Exchange): void {
    const { res } = exchange;
    if (exchange.over || res.destroyed || res.writableEnded) return;
    if (res.headersSent) res.destroy();
    else answer(res, 502, BAD_GATEWAY);
  }

  /** The client's response is closed: the request is no longer open in its environment. */
  function finish(exchange: Exchange): void {
    if (exchange.over) return;
    exchange.over = true;
    clearTimeout(exchange.timer);
    // Cut or abandoned: the environment's server sees its request closed.
    if (!exchange.res.writableFinished) exchange.upstream?.destroy();
    const { environment } = exchange;
    environment.exchanges.delete(exchange);
    if (environment.exchanges.size === 0 && environment.state === 'ready') scheduleIdle(environment);
  }

  function scheduleIdle(environment: Environment): void {
    clearTimeout(environment.idleTimer);
    environment.idleTimer = setTimeout(() => {
      if (environment.state === 'ready' && environment.exchanges.size === 0) terminate(environment);
    }, idleMs).unref();
  }

  /** Scale-in: no more requests for it; SIGTERM, then SIGKILL if still alive after the grace. */
  function terminate(environment: Environment): void {
    if (environment.state !== 'ready' || !environment.child) return;
    environment.state = 'draining';
    clearTimeout(environment.idleTimer);
    counts.sigterms++;
    environment.child.kill('SIGTERM');
    environment.graceTimer = setTimeout(() => {
      if (!environment.alive) return;
      counts.kills++;
      environment.child?.kill('SIGKILL');
    }, graceMs);
  }

  /** The process has exited (asked to, killed, or on its own): the environment is removed. */
  function gone(environment: Environment): void {
    if (!environment.alive) return;
    environment.alive = false;
    live.delete(environment);
    clearTimeout(environment.idleTimer);
    clearTimeout(environment.graceTimer);
    for (const exchange of environment.exchanges) if (!exchange.upstream) fail(exchange);
    // Forwarded requests end as their sockets do (a dead process's are closed by the kernel), which
    // keeps any bytes it wrote last; whatever is still open after a moment is ended here.
    setTimeout(() => {
      for (const exchange of environment.exchanges) {
        exchange.upstream?.destroy();
        fail(exchange);
      }
      environment.agent.destroy();
    }, EXIT_SETTLE_MS).unref();
    environment.markExited();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  const hostForUrl = address.includes(':') ? `[${address}]` : address;

  return {
    url: `http://${hostForUrl}:${port}`,
    async close() {
      if (closed) return;
      closed = true;
      const environments = [...live];
      for (const environment of environments) {
        clearTimeout(environment.idleTimer);
        clearTimeout(environment.graceTimer);
        if (environment.child && environment.child.exitCode === null) environment.child.kill('SIGKILL');
      }
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      const exits = Promise.all(environments.map((environment) => environment.exited));
      await Promise.race([exits, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
      for (const environment of environments) environment.agent.destroy();
      await serverClosed;
    },
    stats: () => ({
      environmentsStarted: counts.environmentsStarted,
      environmentsLive: live.size,
      initTimesMs: [...initTimesMs],
      requests: counts.requests,
      maxOpenPerEnvironment: counts.maxOpenPerEnvironment,
      timedOut: counts.timedOut,
      sigterms: counts.sigterms,
      kills: counts.kills,
      throttled: counts.throttled,
      tooLarge: counts.tooLarge,
    }),
    async scaleIn() {
      const idle = [...live].filter((environment) => environment.state === 'ready' && environment.exchanges.size === 0);
      for (const environment of idle) terminate(environment);
      await Promise.all(idle.map((environment) => environment.exited));
    },
    environments: () => [...live].map((environment) => environment.info()),
  };
}

function answer(res: ServerResponse, status: number, json: string): void {
  if (res.destroyed || res.writableEnded) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) }).end(json);
}

/**
 * The whole request body; `too large` as soon as it passes `limit` (nothing more is read: the request is
 * left paused); undefined if the client left before sending it.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | 'too large' | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      chunks.length = 0;
      resolve('too large');
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => resolve(undefined));
    req.on('close', () => {
      if (!req.complete) resolve(undefined);
    });
  });
}

/** Headers named in `Connection` are hop-by-hop too (RFC 9110 §7.6.1). */
function connectionTokens(value: string | string[] | undefined): Set<string> {
  const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(
    joined
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter(Boolean),
  );
}

function requestHeaders(headers: IncomingHttpHeaders, bodyLength: number): OutgoingHttpHeaders {
  const named = connectionTokens(headers.connection);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !named.has(name)) out[name] = value;
  }
  // The body is whole: its length is known, so the environment never sees a chunked request.
  if (bodyLength > 0 || headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) {
    out['content-length'] = String(bodyLength);
  }
  return out;
}

/** The environment's headers as it wrote them (case, order, repeats), minus hop-by-hop ones. */
function responseHeaders(raw: string[]): string[] {
  // rawHeaders alternates name and value: read them as pairs.
  const pairs: Array<[string, string]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([raw[i] ?? '', raw[i + 1] ?? '']);
  const named = connectionTokens(pairs.filter(([name]) => name.toLowerCase() === 'connection').map(([, v]) => v));
  const out: string[] = [];
  for (const [rawName, value] of pairs) {
    const name = rawName.toLowerCase();
    // content-length passes through here: the body is relayed byte for byte.
    if (name === 'content-length' || (!HOP_BY_HOP.has(name) && !named.has(name))) out.push(rawName, value);
  }
  return out;
}

/** A free loopback port for an environment (released before the environment binds it). */
/**
 * A port for an environment to bind. In Lambda each environment has its own network and a fixed
 * endpoint; here they share loopback with everything else on the machine, and the readiness check (a
 * TCP connect) cannot tell whose listener answered. A port the kernel hands out for port 0 may be
 * handed again to another process between this probe and the environment's bind, which would then
 * pass the check and get the environment's requests. So the port is taken below the kernel's
 * ephemeral range (which port-0 binds never use), at random, and probed.
 */
async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const floor = 10_000;
  for (let attempt = 0; attempt < 20 && low > floor + 1000; attempt++) {
    const port = floor + Math.floor(Math.random() * (low - floor));
    if (await bindable(port)) return port;
  }
  return probePort(0); // no room below the range: the kernel's choice
}

/** The kernel's ephemeral port range (Linux); elsewhere the IANA one. */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && high) return [low, high];
  } catch {
    // not Linux
  }
  return [49152, 65535];
}

async function bindable(port: number): Promise<boolean> {
  return probePort(port).then(
    () => true,
    () => false,
  );
}

function probePort(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(port, '127.0.0.1', () => {
      const { port: bound } = probe.address() as AddressInfo;
      probe.close(() => resolve(bound));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
