/**
 * `npx tsx bench/stateless-overhead.ts`: what the 2026-07-28 path adds to a call, on loopback, in one
 * process (gateway, targets and client share the event loop, so the figures are upper bounds).
 * Direct and gateway calls alternate. DynamoDB is unreachable throughout: the stateless path never
 * needs it. Prints p50/p95 in ms; writes bench/results/stateless-latest.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDemoTarget } from '../lambda/local/demo-target';
import { startLocalGateway } from '../lambda/local/local-gateway';
import { startModernDemoTarget } from '../lambda/local/modern-demo-target';
import { RequestStateSealer, argumentsDigest } from '../lambda/stateless/request-state';
import { SealedBox } from '../lambda/crypto/sealed-box';

const N = Number(process.env.BENCH_CALLS ?? 300);
const WARMUP = 30;
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
};
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function headers(name: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'tools/call',
    'mcp-name': name,
  };
}

async function call(url: string, name: string, params: Record<string, unknown>): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(url, { method: 'POST', headers: headers(name), body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, ...params, _meta: META } }) });
  const body = (await res.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (!body.result) throw new Error(JSON.stringify(body));
  return body.result;
}

function stats(values: number[]): { p50: number; p95: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 100) / 100;
  return { p50: at(0.5), p95: at(0.95) };
}

async function pair(direct: () => Promise<unknown>, gateway: () => Promise<unknown>) {
  for (let i = 0; i < WARMUP; i++) {
    await direct();
    await gateway();
  }
  const d: number[] = [];
  const g: number[] = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await direct();
    const t1 = performance.now();
    await gateway();
    d.push(t1 - t0);
    g.push(performance.now() - t1);
  }
  const ds = stats(d);
  const gs = stats(g);
  return { direct: ds, gateway: gs, addedP50: Math.round((gs.p50 - ds.p50) * 100) / 100 };
}

async function main(): Promise<void> {
  const modern = await startModernDemoTarget();
  const legacy = await startDemoTarget();
  const gateway = await startLocalGateway({
    port: 0,
    demo: false,
    startupReport: false,
    dynamodbEndpoint: 'http://127.0.0.1:9',
    logger: silent,
    config: { targets: [{ name: 'm', url: modern.url }, { name: 'l', url: legacy.url }], requestStateKeys: { current: 'bench-key-0123456789abcdefghijklmnopqrstuvwxyz' } },
  });
  try {
    const echo = await pair(
      () => call(modern.url, 'echo', { arguments: { text: 'x' } }),
      () => call(gateway.url, 'm___echo', { arguments: { text: 'x' } }),
    );
    const roundTrip = async (url: string, name: string) => {
      const first = await call(url, name, { arguments: { command: 'ls' } });
      await call(url, name, { arguments: { command: 'ls' }, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } }, requestState: first.requestState });
    };
    const mrtr = await pair(() => roundTrip(modern.url, 'use_aws'), () => roundTrip(gateway.url, 'm___use_aws'));
    // A 2026-07-28 client calling a 2025-only target (pooled 2025 session); direct = a 2025 call on a fixed session.
    const init = await fetch(legacy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'b', version: '1' } } }),
    });
    const sid = init.headers.get('mcp-session-id')!;
    await init.text();
    const legacyHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
    await fetch(legacy.url, { method: 'POST', headers: legacyHeaders, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) => r.text());
    const crossEra = await pair(
      async () => {
        const res = await fetch(legacy.url, { method: 'POST', headers: legacyHeaders, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } }) });
        await res.text();
      },
      () => call(gateway.url, 'l___echo', { arguments: { text: 'x' } }),
    );
    const sealer = new RequestStateSealer(SealedBox.fromSecrets({ current: 'bench-key-0123456789abcdefghijklmnopqrstuvwxyz' }), 600);
    const binding = { principal: 'p', target: 't', method: 'tools/call', name: 'n', argsDigest: argumentsDigest({ command: 'ls' }) };
    const t0 = performance.now();
    for (let i = 0; i < 10_000; i++) sealer.open(sealer.seal(binding, { kind: 'relay', targetState: 'v1.' + 'x'.repeat(200), confirmed: false }), binding);
    const sealOpenUs = Math.round(((performance.now() - t0) / 10_000) * 1000 * 10) / 10;
    const results = { calls: N, echo, inputRequiredRoundTrip: mrtr, modernClientToLegacyTarget: crossEra, sealPlusOpenMicroseconds: sealOpenUs, node: process.version };
    console.log(JSON.stringify(results, null, 2));
    mkdirSync(join(__dirname, 'results'), { recursive: true });
    writeFileSync(join(__dirname, 'results', 'stateless-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  } finally {
    await gateway.close();
    await modern.close();
    await legacy.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
