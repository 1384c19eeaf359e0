import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';

/**
 * A real OAuth 2.1 authorization server on loopback (oidc-provider, with its development sign-in pages:
 * any login name, any password), in a process of its own because oidc-provider is ESM only
 * (./serve-authorization-server.ts); `npm run oauth:demo` and the tests start it here.
 */

const PROGRAM = join(__dirname, 'serve-authorization-server.ts');

/** How long the server may take to print `ready` (a cold tsx compile on a slow machine). */
const START_TIMEOUT_MS = 30_000;
/** How long a stop waits after SIGTERM before it kills the process. */
const STOP_GRACE_MS = 5_000;

export interface AuthorizationServerOptions {
  /** The pre-registered client's redirect URIs (the gateway's `<publicUrl>/connect/callback/<target>`). */
  redirectUris: string[];
  /** Default 3600. */
  accessTokenTtlSeconds?: number;
  /** Default `gateway`. */
  clientId?: string;
  /** Default: a random one. */
  clientSecret?: string;
  /** Its loopback port; default a free one. */
  port?: number;
  /** Further settings the server reads from its environment. */
  env?: Record<string, string>;
}

export interface AuthorizationServer {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The process's id (to tell it is gone after a stop). */
  pid: number;
  /** Stops it (SIGTERM, then SIGKILL past a grace period); what it issued is forgotten. */
  close(): Promise<void>;
}

export async function startAuthorizationServer(options: AuthorizationServerOptions): Promise<AuthorizationServer> {
  const clientId = options.clientId ?? 'gateway';
  const clientSecret = options.clientSecret ?? randomBytes(24).toString('base64url');
  const port = options.port || (await freeLoopbackPort());
  const server = await startReadyProcess(PROGRAM, {
    ...options.env,
    PORT: String(port),
    CLIENT_ID: clientId,
    CLIENT_SECRET: clientSecret,
    REDIRECT_URIS: JSON.stringify(options.redirectUris),
    ACCESS_TOKEN_TTL: String(options.accessTokenTtlSeconds ?? 3600),
  });
  return { issuer: server.ready, clientId, clientSecret, pid: server.pid, close: server.close };
}

/** A server program run as a process of its own, once it printed `ready <value>`. */
export interface ReadyProcess {
  /** What it printed after `ready` (its base URL). */
  ready: string;
  pid: number;
  /** Stops it (SIGTERM, then SIGKILL past a grace period). */
  close(): Promise<void>;
}

/** Runs a TypeScript server program (through tsx) with `env` added, until it prints `ready <value>`. */
export async function startReadyProcess(program: string, env: Record<string, string>): Promise<ReadyProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', program], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  // Should this process end without stopping it (an uncaught error, process.exit), it goes too.
  const killOnExit = () => void (running() && child.kill('SIGKILL'));
  process.once('exit', killOnExit);
  void exited.then(() => process.off('exit', killOnExit));

  // Its output is read for as long as it runs (a full pipe would block it); the tail explains a failure.
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);

  const close = async () => {
    if (!running()) return exited;
    child.kill('SIGTERM');
    const killed = setTimeout(() => running() && child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(killed);
  };

  try {
    const ready = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${program} did not start within ${START_TIMEOUT_MS} ms: ${output}`)),
        START_TIMEOUT_MS,
      );
      const onData = () => {
        const match = /ready (\S+)/.exec(output);
        if (!match?.[1]) return;
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(match[1]);
      };
      child.stdout?.on('data', onData);
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`${program} exited (${child.exitCode ?? child.signalCode}): ${output}`));
      });
    });
    return { ready, pid: child.pid ?? 0, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A loopback port free now (the server takes its port as a setting, so port 0 cannot be used). */
export async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
