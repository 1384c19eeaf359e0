import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { orphanGuard } from '../process-guard/orphan-guard';
import { FunctionUrlSink } from './response-sink';

/**
 * One execution environment: a runtime process (AWS's runtime interface client loading the function's
 * bundle) and the Runtime API it talks to (the part of Lambda called RAPID), on its own loopback port.
 *
 * Lifecycle, as Lambda runs it:
 * - init: the process starts, loads the handler and asks for its first event (`GET /next`);
 * - invoke: the event is the answer to that pending `/next`; the deadline travels in a header, which is
 *   where `context.getRemainingTimeInMillis()` comes from;
 * - the runtime streams the response (`POST /invocation/{id}/response`, chunked), which goes to the
 *   client as it arrives;
 * - the invocation is over when the runtime asks for its next event: the runtime interface client does
 *   that right after the handler's promise settled and the response stream ended, without waiting for
 *   anything else still pending (Node.js 24 rule). The process is frozen (SIGSTOP) at that moment and
 *   thawed (SIGCONT) for its next event;
 * - a timeout, a crash or an init error ends the environment (Lambda starts a fresh one next time).
 */

export interface EnvironmentSpec {
  id: number;
  /** Node.js binary and runtime interface client entry (see runtime-image.ts). */
  node: string;
  ric: string;
  /** LAMBDA_TASK_ROOT: the directory holding the deployment package. */
  taskRoot: string;
  /** _HANDLER, e.g. `index.handler`. */
  handler: string;
  functionName: string;
  memoryMb: number;
  timeoutMs: number;
  region: string;
  /** The function's own environment variables (what the CDK stack sets). */
  environment: Record<string, string>;
  /** Lambda gives init 10 s (on-demand functions). */
  initTimeoutMs: number;
  /** Where the environment's stdout/stderr lines go (CloudWatch Logs, in AWS). */
  log(line: string): void;
}

export type EnvironmentState = 'init' | 'ready' | 'busy' | 'frozen' | 'dead';
export type InvocationOutcome = 'success' | 'error' | 'timeout' | 'crash';

interface Active {
  requestId: string;
  res: ServerResponse;
  sink?: FunctionUrlSink;
  timer: NodeJS.Timeout;
  responded: boolean;
  /** The response (or error) has been received in full: the runtime is about to ask for its next event. */
  complete: boolean;
  failed: boolean;
  settle(outcome: InvocationOutcome): void;
}

const RUNTIME_PATH = '/2018-06-01/runtime';
const ACCOUNT = '000000000000';

export class ExecutionEnvironment {
  state: EnvironmentState = 'init';
  /** When the environment last finished an invocation (for the idle reaper). */
  idleSince = Date.now();
  invocations = 0;
  freezes = 0;
  /** Milliseconds from process start to its first `/next` (Lambda's "Init Duration"). */
  initMs = 0;
  private child?: ChildProcess;
  private readonly server: Server;
  private pendingNext?: ServerResponse;
  private active?: Active;
  private initialized?: { resolve(): void; reject(error: Error): void };
  private readonly exited: Promise<void>;
  private markExited!: () => void;
  /** Shutting down (terminate): never frozen again. */
  private terminating = false;

  private constructor(private readonly spec: EnvironmentSpec) {
    this.server = createServer((req, res) => this.route(req, res));
    // The runtime holds `/next` open for as long as it waits; no socket timeouts on this side.
    this.server.requestTimeout = 0;
    this.server.headersTimeout = 0;
    this.server.keepAliveTimeout = 0;
    this.exited = new Promise((resolve) => {
      this.markExited = resolve;
    });
  }

  get id(): number {
    return this.spec.id;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Its Runtime API (`host:port`), what the function's `AWS_LAMBDA_RUNTIME_API` says; set once it booted. */
  runtimeApi = '';

  /** Busy, but its response is complete: it will ask for its next event (and freeze) in a moment. */
  get finishing(): boolean {
    return this.state === 'busy' && this.active?.complete === true;
  }

  /** Starts the process and resolves once it asked for its first event (its init is done). */
  static async start(spec: EnvironmentSpec): Promise<ExecutionEnvironment> {
    const environment = new ExecutionEnvironment(spec);
    await environment.boot();
    return environment;
  }

  private async boot(): Promise<void> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    const { port } = this.server.address() as AddressInfo;
    this.runtimeApi = `127.0.0.1:${port}`;
    const started = Date.now();
    const ready = new Promise<void>((resolve, reject) => {
      this.initialized = { resolve, reject };
    });
    const child = spawn(this.spec.node, [...this.nodeFlags(), this.spec.ric], {
      cwd: this.spec.taskRoot,
      env: this.processEnvironment(this.runtimeApi),
      stdio: ['ignore', 'pipe', 'pipe'],
      // A session of its own: a terminal's Ctrl-C reaches the front end only, which shuts the
      // environments down in order. The kernel then does nothing for it when the front end dies
      // (SIGKILL), frozen or not: the orphan guard ends it.
      detached: true,
    });
    this.child = child;
    const { pid } = child;
    if (pid !== undefined) {
      orphanGuard.watch(pid);
      child.once('exit', () => orphanGuard.forget(pid));
    }
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream?.setEncoding('utf8').on('data', (text: string) => {
        const lines = (rest + text).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) this.spec.log(`[env ${this.id}] ${line}`);
      });
    }
    child.on('error', (error) => this.onExit(`spawn failed: ${error.message}`));
    child.on('exit', (code, signal) => this.onExit(`exited (${signal ?? code})`));
    const timer = setTimeout(() => {
      this.initialized?.reject(new Error(`init did not finish within ${this.spec.initTimeoutMs} ms`));
    }, this.spec.initTimeoutMs);
    try {
      await ready;
      this.initMs = Date.now() - started;
    } catch (error) {
      await this.kill();
      throw error;
    } finally {
      clearTimeout(timer);
      this.initialized = undefined;
    }
  }

  /** What the managed runtime's bootstrap gives node: a heap sized to the function's memory. */
  private nodeFlags(): string[] {
    return [`--max-old-space-size=${Math.floor(this.spec.memoryMb * 0.9)}`];
  }

  /** The variables Lambda defines for a Node.js function, then the function's own. */
  private processEnvironment(runtimeApi: string): NodeJS.ProcessEnv {
    const { functionName, region } = this.spec;
    const logStream = `${new Date().toISOString().slice(0, 10).replaceAll('-', '/')}/[$LATEST]${randomBytes(16).toString('hex')}`;
    return {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      LANG: 'en_US.UTF-8',
      TZ: ':UTC',
      AWS_LAMBDA_RUNTIME_API: runtimeApi,
      _HANDLER: this.spec.handler,
      LAMBDA_TASK_ROOT: this.spec.taskRoot,
      LAMBDA_RUNTIME_DIR: this.spec.ric.replace(/\/index\.mjs$/, ''),
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
      AWS_LAMBDA_FUNCTION_NAME: functionName,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(this.spec.memoryMb),
      AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${functionName}`,
      AWS_LAMBDA_LOG_STREAM_NAME: logStream,
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      // The execution role's temporary credentials, in AWS; dummies here (DynamoDB Local/dynalite ignore them).
      AWS_ACCESS_KEY_ID: 'ASIALOCALLAMBDA',
      AWS_SECRET_ACCESS_KEY: 'local-lambda-secret',
      AWS_SESSION_TOKEN: 'local-lambda-session',
      ...this.spec.environment,
    };
  }

  /** Hands the environment its next event; resolves when the invocation is over (or failed). */
  invoke(event: LambdaFunctionURLEvent, res: ServerResponse): Promise<InvocationOutcome> {
    const next = this.pendingNext;
    if (!next || (this.state !== 'ready' && this.state !== 'frozen')) {
      return Promise.reject(new Error(`environment ${this.id} is ${this.state}, not waiting for an event`));
    }
    if (this.state === 'frozen') this.signal('SIGCONT');
    this.state = 'busy';
    this.invocations++;
    this.pendingNext = undefined;
    const requestId = event.requestContext.requestId;
    const deadline = Date.now() + this.spec.timeoutMs;
    return new Promise<InvocationOutcome>((resolve) => {
      const timer = setTimeout(() => this.timeOut(), this.spec.timeoutMs);
      this.active = {
        requestId,
        res,
        timer,
        responded: false,
        complete: false,
        failed: false,
        settle: (outcome) => {
          clearTimeout(timer);
          this.active = undefined;
          resolve(outcome);
        },
      };
      const { functionName, region } = this.spec;
      next.writeHead(200, {
        'content-type': 'application/json',
        'lambda-runtime-aws-request-id': requestId,
        'lambda-runtime-deadline-ms': String(deadline),
        'lambda-runtime-invoked-function-arn': `arn:aws:lambda:${region}:${ACCOUNT}:function:${functionName}`,
        'lambda-runtime-trace-id': event.headers['x-amzn-trace-id'] ?? '',
      });
      next.end(JSON.stringify(event));
    });
  }

  /**
   * Shutdown of a busy environment: SIGTERM first (as Lambda does before shutting an environment down
   * when an extension is registered), so the function can end what its invocation holds — the gateway
   * cancels its calls at their targets and removes their pending records — then SIGKILL after `graceMs`.
   */
  async terminate(graceMs: number): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      this.terminating = true;
      this.signal('SIGCONT');
      this.signal('SIGTERM');
      await Promise.race([this.exited, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    }
    await this.kill();
  }

  /** Ends the environment (idle reaping, timeout, shutdown); bounded. */
  async kill(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      this.signal('SIGCONT'); // a stopped process is resumed before it is killed
      this.signal('SIGKILL');
      await Promise.race([this.exited, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    }
    this.markDead();
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '';
    const match = /^\/2018-06-01\/runtime\/invocation\/([^/]+)\/(response|error)$/.exec(path);
    if (req.method === 'GET' && path === `${RUNTIME_PATH}/invocation/next`) {
      this.onNext(res);
    } else if (req.method === 'POST' && match) {
      const active = this.active;
      if (active?.requestId !== decodeURIComponent(match[1] ?? '')) reply(res, 400, 'InvalidRequestID');
      else if (match[2] === 'response') this.onResponse(req, res, active);
      else void this.onError(req, res);
    } else if (req.method === 'POST' && path === `${RUNTIME_PATH}/init/error`) {
      void this.onInitError(req, res);
    } else {
      reply(res, 404, 'NotFound');
    }
  }

  private onNext(res: ServerResponse): void {
    this.pendingNext = res;
    if (this.state === 'init') {
      this.state = 'ready';
      this.initialized?.resolve();
      return;
    }
    const active = this.active;
    if (this.state !== 'busy' || !active) return;
    // The invocation is over by the runtime's own signal. Freeze first, then let the pool reuse it —
    // unless the environment is being shut down: then it must run on to its own exit.
    if (!this.terminating) this.signal('SIGSTOP');
    this.state = 'frozen';
    this.freezes++;
    this.idleSince = Date.now();
    if (!active.responded) {
      // The runtime finished without sending a response (should not happen with the RIC).
      failClient(active);
      active.failed = true;
    }
    active.settle(active.failed ? 'error' : 'success');
  }

  private onResponse(req: IncomingMessage, res: ServerResponse, active: Active): void {
    active.responded = true;
    const streaming = String(req.headers['lambda-runtime-function-response-mode'] ?? '').toLowerCase() === 'streaming';
    if (!streaming) return void this.onBufferedResponse(req, res, active);
    const sink = new FunctionUrlSink(active.res, String(req.headers['content-type'] ?? 'application/octet-stream'));
    active.sink = sink;
    sink.on('error', () => undefined); // a failed client write must not take the front end down
    req.pipe(sink, { end: false });
    req.on('end', () => {
      // A handler that threw mid-stream: the runtime reports it in the trailers.
      const errorType = req.trailers['lambda-runtime-function-error-type'];
      if (errorType) {
        active.failed = true;
        this.spec.log(`[env ${this.id}] invocation ${active.requestId} failed: ${errorType}`);
        sink.fail();
      } else {
        sink.end();
      }
      active.complete = true;
      reply(res, 202, 'OK');
    });
    req.on('aborted', () => {
      active.failed = true;
      sink.fail();
    });
  }

  /** A non-streaming handler's result, shaped as a function URL response (status, headers, body). */
  private async onBufferedResponse(req: IncomingMessage, res: ServerResponse, active: Active): Promise<void> {
    const body = await readAll(req);
    active.complete = true;
    reply(res, 202, 'OK');
    let result: unknown;
    try {
      result = JSON.parse(body.toString() || 'null');
    } catch {
      result = body.toString();
    }
    const client = active.res;
    if (client.destroyed || client.headersSent) return;
    if (result && typeof result === 'object' && 'statusCode' in result) {
      const shaped = result as {
        statusCode: number;
        headers?: Record<string, string>;
        cookies?: string[];
        body?: string;
        isBase64Encoded?: boolean;
      };
      const headers: Record<string, string | string[]> = { ...shaped.headers };
      if (shaped.cookies?.length) headers['set-cookie'] = shaped.cookies;
      client.writeHead(shaped.statusCode, headers);
      client.end(shaped.body === undefined ? '' : Buffer.from(shaped.body, shaped.isBase64Encoded ? 'base64' : 'utf8'));
      return;
    }
    client.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result));
  }

  private async onError(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    reply(res, 202, 'OK');
    const active = this.active;
    if (!active) return;
    active.responded = true;
    active.complete = true;
    active.failed = true;
    this.spec.log(`[env ${this.id}] invocation ${active.requestId} failed: ${body.toString().slice(0, 500)}`);
    failClient(active);
  }

  private async onInitError(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    reply(res, 202, 'OK');
    this.initialized?.reject(new Error(`init failed: ${body.toString().slice(0, 500)}`));
  }

  private timeOut(): void {
    const active = this.active;
    if (!active) return;
    this.spec.log(`[env ${this.id}] ${active.requestId} Task timed out after ${this.spec.timeoutMs / 1000} seconds`);
    failClient(active);
    active.settle('timeout');
    // Lambda does not reuse an environment whose invocation timed out.
    void this.kill();
  }

  private onExit(reason: string): void {
    this.markExited();
    if (this.state === 'dead') return;
    this.initialized?.reject(new Error(`runtime process ${reason} during init`));
    const active = this.active;
    if (active) {
      // Ended by the front end's shutdown (SIGTERM, then SIGKILL after the grace), not by a crash.
      this.spec.log(
        this.terminating
          ? `[env ${this.id}] stopped with the shutdown during invocation ${active.requestId}`
          : `[env ${this.id}] runtime process ${reason} during invocation ${active.requestId}`,
      );
      failClient(active);
      active.settle('crash');
    }
    this.markDead();
  }

  private markDead(): void {
    if (this.state === 'dead') return;
    this.state = 'dead';
    this.pendingNext?.destroy();
    this.pendingNext = undefined;
    this.server.close();
    this.server.closeAllConnections();
  }

  private signal(signal: NodeJS.Signals): void {
    try {
      if (this.child?.pid !== undefined) process.kill(this.child.pid, signal);
    } catch {
      // already gone
    }
  }
}

/** The client gets a 502 if nothing was sent yet; a started stream is cut. */
function failClient(active: Active): void {
  if (active.sink) {
    active.sink.fail();
    return;
  }
  const res = active.res;
  if (res.destroyed || res.writableEnded) return;
  if (res.headersSent) return void res.destroy();
  res.writeHead(502, { 'content-type': 'application/json' }).end('{"Message":"Internal Server Error"}');
}

function reply(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status: text }));
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}
