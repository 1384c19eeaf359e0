/**
 * Which MCP clients poll (SSE polling, SEP-1699), measured: each official client calls a tool on a
 * loopback server that ends the call's stream before the response (test/support/polling-probe.ts),
 * and the server records what the client does — a GET with `Last-Event-ID`, after how long, how many
 * times in a row — and whether the call completed.
 *
 *   npx tsx scripts/measure-client-polling.ts            # TypeScript SDK v1 and v2
 *   PYTHON=/tmp/venv/bin/python npx tsx scripts/measure-client-polling.ts   # and the Python SDK
 *
 * (the Python SDK: `python3 -m venv /tmp/venv && /tmp/venv/bin/pip install mcp`). Prints a Markdown table.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type ProbeCall, type ProbeOptions, startPollingProbe } from '../test/support/polling-probe';

const CALL_TIMEOUT_MS = 30_000;

interface Outcome {
  ok: boolean;
  detail: string;
}

type Run = (url: string) => Promise<Outcome>;

const info = { name: 'polling-measure', version: '1.0.0' };

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).slice(0, 120);

const v1: Run = async (url) => {
  const client = new V1Client(info);
  try {
    await client.connect(new V1Transport(new URL(url)));
    const result = await client.callTool({ name: 'probe', arguments: {} }, undefined, { timeout: CALL_TIMEOUT_MS });
    return { ok: true, detail: JSON.stringify(result.content) };
  } catch (error) {
    return { ok: false, detail: errorText(error) };
  } finally {
    await client.close().catch(() => undefined);
  }
};

const v2 =
  (mode?: 'legacy'): Run =>
  async (url) => {
    const client = new V2Client(info, mode ? { versionNegotiation: { mode } } : {});
    try {
      await client.connect(new V2Transport(new URL(url)));
      const result = await client.callTool({ name: 'probe', arguments: {} }, { timeout: CALL_TIMEOUT_MS });
      return { ok: true, detail: JSON.stringify(result.content) };
    } catch (error) {
      return { ok: false, detail: errorText(error) };
    } finally {
      await client.close().catch(() => undefined);
    }
  };

let pythonVersion = '';
const python: Run = async (url) => {
  const script = join(__dirname, 'client-polling', 'python_client.py');
  const { stdout } = await promisify(execFile)(process.env.PYTHON ?? 'python3', [
    script,
    url,
    String(CALL_TIMEOUT_MS / 1000),
  ]);
  const outcome = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as {
    ok: boolean;
    text?: string;
    error?: string;
    version: string;
  };
  pythonVersion = outcome.version;
  return { ok: outcome.ok, detail: outcome.text ?? outcome.error ?? '' };
};

async function measure(
  run: Run,
  options: ProbeOptions,
): Promise<{ call?: ProbeCall; outcome: Outcome; other: string[] }> {
  const probe = await startPollingProbe(options);
  try {
    const outcome = await run(probe.url);
    return { call: probe.calls[0], outcome, other: probe.other };
  } finally {
    await probe.close();
  }
}

const delays = (call?: ProbeCall) => (call?.reconnects ?? []).map((r) => r.delayMs);

async function main(): Promise<void> {
  const clients: Array<[string, Run]> = [
    ['TypeScript SDK v1 (`@modelcontextprotocol/sdk` 1.32.2)', v1],
    ['TypeScript SDK v2 (`@modelcontextprotocol/client` 2.4.0), default negotiation', v2()],
    ['TypeScript SDK v2 (`@modelcontextprotocol/client` 2.4.0), `mode: legacy`', v2('legacy')],
  ];
  if (process.env.PYTHON) clients.push(['Python SDK (`mcp` VERSION)', python]);

  const rows: string[] = [
    '| client | reconnects after a close (GET) | sends `Last-Event-ID` | delay with `retry: 400` | delay without `retry` | 20 closes in a row | call completed |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const [name, run] of clients) {
    const withRetry = await measure(run, { retryMs: 400, closes: 1 });
    const without = await measure(run, { closes: 1 });
    const many = await measure(run, { retryMs: 100, closes: 20 });
    const reconnected = (withRetry.call?.reconnects.length ?? 0) > 0;
    const sentId = withRetry.call?.reconnects.every((r) => r.lastEventId?.includes('.')) ?? false;
    const ms = (values: number[]) => (values.length ? `${values.join(', ')} ms` : 'none');
    const tolerated = many.call?.reconnects.length ?? 0;
    rows.push(
      `| ${name.replace('VERSION', pythonVersion)} | ${reconnected ? 'yes' : 'no'} | ${reconnected ? (sentId ? 'yes' : 'no') : '—'} | ${ms(delays(withRetry.call))} | ${ms(delays(without.call))} | ${many.outcome.ok ? `all 20 (then the response)` : `${tolerated} reconnects, then: ${many.outcome.detail}`} | ${withRetry.outcome.ok ? 'yes' : `no: ${withRetry.outcome.detail}`} |`,
    );
    const other = [...withRetry.other, ...without.other, ...many.other];
    if (other.length) console.error(`${name}: also sent ${[...new Set(other)].join('; ')}`);
  }
  console.log(rows.join('\n'));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
