/**
 * `npx tsx bench/markdown.ts [results.json]`: the rows of one `npm run bench` run (default
 * bench/results/latest.json) as the Markdown table docs/performance.md publishes, with the machine
 * and its load, so a published table is one run's, verbatim.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Json } from '../test/support/mcp-http';
import type { Row } from './run';

const LABELS: Record<string, string> = {
  legacyEchoDual: '2025-11-25 `tools/call` echo, dual-era target',
  legacyEchoDualPassthrough: '… through the passthrough proxy (its floor)',
  legacyEcho: '2025-11-25 echo, 2025-only target, session declared elicitation (GET stream per call)',
  legacyEchoPassthrough: '… through the passthrough proxy (its floor)',
  legacyEchoNoInput: '2025-11-25 echo, 2025-only target, no input capabilities',
  legacyEchoNoInputNoReadAhead: '… the same, read-ahead off (`sessionReadAhead: false`)',
  legacyEchoNoInputPassthrough: '… through the passthrough proxy (its floor)',
  legacyEchoNoInputRuntimeNode: '2025-11-25 echo, no input capabilities, gateway on Node 24',
  legacy50msTool: '2025-11-25, a tool working 50 ms (floor: the echo’s)',
  modernEcho: '2026-07-28 `tools/call` echo (dual-era target)',
  modernEchoPassthrough: '… through the passthrough proxy (its floor)',
  modernEchoRuntimeNode: '2026-07-28 echo, gateway on Node 24',
  modernInputRequired: '2026-07-28 `input_required` round trip (two requests)',
  modernInputRequiredPassthrough: '… through the passthrough proxy (its floor)',
  legacyElicitationOtherInstance: '2025-11-25 elicitation round held, answered through the other instance',
  legacyElicitationPassthrough: '… call and answer through two passthrough proxies (its floor)',
  lambdaLegacyEcho: 'function URL (`--lambda`): 2025-11-25 echo, 2025-only target, no input capabilities',
  lambdaLegacyEchoPassthrough: '… through a forward-only function in the same emulator (its floor)',
  lambdaModernEcho: 'function URL (`--lambda`): 2026-07-28 echo (dual-era target)',
  lambdaModernEchoPassthrough: '… through a forward-only function in the same emulator (its floor)',
  webFunctionLegacyEcho: 'Web Function: 2025-11-25 echo, 2025-only target, no input capabilities',
  webFunctionLegacyEchoPassthrough: '… through a forward-only server in the same emulator (its floor)',
  webFunctionModernEcho: 'Web Function: 2026-07-28 echo (dual-era target)',
  webFunctionModernEchoPassthrough: '… through a forward-only server in the same emulator (its floor)',
};

const file = process.argv[2] ?? join(__dirname, 'results/latest.json');
const results = JSON.parse(readFileSync(file, 'utf8')) as Json;
const ms = (x: number | undefined) => (x === undefined ? '—' : x.toFixed(2));
const m = results.machine;
console.log(
  `Measured ${results.date}: ${m.cpus} × ${m.cpuModel}, ${m.memoryGiB} GiB, Node ${m.node}; load average (1/5/15 min) ${m.loadAverageAtStart} at the start, ${m.loadAverageAtEnd} at the end; ${results.calls} calls per row.\n`,
);
console.log(
  '| call | direct p50 / p95 | through p50 / p95 | added p50 | × floor | CPU per call (gateway; floor rows: proxy) | DynamoDB requests per call |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const [key, row] of Object.entries(results.rows as Record<string, Row>)) {
  const db = Object.entries(row.dynamodbRequestsPerCall)
    .map(([operation, n]) => `${operation} ${n}`)
    .join(', ');
  console.log(
    `| ${LABELS[key] ?? key} | ${ms(row.direct?.p50)} / ${ms(row.direct?.p95)} ms | ${ms(row.gateway.p50)} / ${ms(row.gateway.p95)} ms | ${(row.addedP50Ms ?? 0) >= 0 ? '+' : ''}${ms(row.addedP50Ms)} ms | ${row.timesFloor === undefined ? '—' : row.timesFloor.toFixed(2)} | ${ms(row.gatewayCpuMsPerCall)} ms | ${db ? `${db} (${row.dynamodbResponseBytesPerCall} bytes read)` : '0'} |`,
  );
}
const c = results.coldStart;
if (c)
  console.log(
    `\nLambda bundle ${(c.bundleBytes / 1024).toFixed(0)} KiB${c.bundleCodeBytes === undefined ? '' : ` (index.mjs; ${(c.bundleCodeBytes / 1024).toFixed(0)} KiB with its chunks)`}; import ${c.importMs} ms (median of 7, Node ${m.node}), ${c.importMsRuntimeNode ?? '—'} ms (median of 7, Node ${c.lambdaNode}); in \`npm start -- --lambda\` (Node ${c.lambdaNode}) a 2026-07-28 echo as the first request of a fresh environment ${c.modern.firstCallMs} ms (init ${c.modern.initMs} ms), a 2025 \`initialize\` ${c.legacy.initializeMs} ms (init ${c.legacy.initMs} ms) and the session's first \`tools/call\` ${c.legacy.firstCallMs} ms.`,
  );
const w = results.webFunctionWaiting;
if (w) {
  console.log(
    `\nOne Web Function environment (\`maxConcurrencyPerEnvironment: 128\`, Node ${w.node}), VmRSS with 0 waiting (warm, sessions set up): ${w.baselineMb} MB; ${w.answered.correctResults} of ${w.answered.of} results correct after the answers.\n`,
  );
  console.log(
    '| waiting elicitations | VmRSS | added | per waiting call | CPU while they wait | per waiting call | DynamoDB per waiting call and second |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const step of w.steps as Json[])
    console.log(
      `| ${step.waiting} | ${step.rssMb} MB | ${step.addedMb} MB | ${step.mbPerWaitingCall} MB | ${step.idleCpuMsPerSecond} ms/s | ${step.idleCpuMsPerWaitingCallSecond} ms/s | ${Object.entries(
        step.dynamodbPerWaitingCallSecond as Record<string, number>,
      )
        .map(([operation, n]) => `${operation} ${n}`)
        .join(', ')} |`,
    );
}
const cost = results.costModel;
if (cost) {
  const thinks = [...new Set((cost.rows as Json[]).map((row) => row.thinkSeconds as number))];
  console.log(
    `\n| $ per million elicitations | ${thinks.map((t) => `${t} s think: compute + DynamoDB = total`).join(' | ')} |`,
  );
  console.log(`| --- | ${thinks.map(() => '---').join(' | ')} |`);
  for (const form of [...new Set((cost.rows as Json[]).map((row) => row.form as string))]) {
    const cells = thinks.map((t) => {
      const row = (cost.rows as Json[]).find((r) => r.form === form && r.thinkSeconds === t)!;
      return `$${row.computeUsd.toFixed(2)} + $${row.dynamodbUsd.toFixed(2)} = **$${row.totalUsd.toFixed(2)}**`;
    });
    console.log(`| ${form} | ${cells.join(' | ')} |`);
  }
}
