import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from '../loopback';

/**
 * The MCP project's own "everything" server (npm `@modelcontextprotocol/server-everything`, built on the
 * TypeScript SDK v1): a server as others write it, exercising every feature of 2025-11-25 — among them
 * the experimental tasks (its `simulate-research-query` tool runs as a task, and asks the user through
 * the task when the query is ambiguous) and resource subscriptions. Run as its own process over
 * Streamable HTTP, as its README starts it (`mcp-server-everything streamableHttp`, `PORT`).
 */
export interface EverythingServer {
  url: string;
  close(): Promise<void>;
}

const ENTRY = join(__dirname, '../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');

export async function startEverythingServer(): Promise<EverythingServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [ENTRY, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the everything server did not start: ${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on port/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the everything server exited with ${code}: ${output}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
