import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '../loopback';

/** The loopback authorization server of ./serve-authorization-server.ts, in a process of its own. */
export interface AuthorizationServer {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Stops it (SIGTERM); what it issued is forgotten. */
  close(): Promise<void>;
}

export async function startAuthorizationServer(options: {
  redirectUris: string[];
  accessTokenTtlSeconds?: number;
}): Promise<AuthorizationServer> {
  const clientId = 'gateway';
  const clientSecret = 'gateway-secret-for-tests';
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', join(__dirname, 'serve-authorization-server.ts')],
    {
      env: {
        ...process.env,
        PORT: String(await freePort()),
        CLIENT_ID: clientId,
        CLIENT_SECRET: clientSecret,
        REDIRECT_URIS: JSON.stringify(options.redirectUris),
        ACCESS_TOKEN_TTL: String(options.accessTokenTtlSeconds ?? 3600),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the authorization server did not start: ${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const ready = /ready (\S+)/.exec(output);
      if (ready?.[1]) {
        clearTimeout(timer);
        resolve(ready[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the authorization server exited with ${code}: ${output}`));
    });
  });
  return {
    issuer,
    clientId,
    clientSecret,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
