/**
 * `npx tsx bench/profile.ts [legacy|modern|round] [calls]`: an echo tool called through a gateway
 * process (bench/serve-gateway.ts) by an official SDK client — or, `round`, a held elicitation round:
 * the 2025-only target's `use_aws` called through gateway A, the client's answer POSTed to gateway B
 * (both profiled, their samples added up); after a warm-up, the V8 profiler records the gateway(s)
 * while `calls` calls run, and this prints where their CPU time went: inclusive time by module and
 * self time by function (top 25). For finding what to optimize; the figures to publish come from
 * `npm run bench`.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { legacyClient, modernClient } from './clients';
import { startChild, startGatewayChild, startTarget } from './processes';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

async function main(): Promise<void> {
  const mode = process.argv[2] ?? 'modern';
  const calls = Number(process.argv[3] ?? 2000);
  const dir = mkdtempSync(join(tmpdir(), 'prof-'));
  const dynamo = await startChild(['bench/serve-dynamo.ts'], /ready (\S+)/);
  const target = await startTarget(mode === 'modern' ? 'dual' : 'legacy');
  const config = {
    targets: [{ name: 't', url: target.url }],
    requestStateKeys: { current: 'p'.repeat(40) },
    logLevel: 'SILENT' as const,
  };
  const gateways = await Promise.all(
    (mode === 'round' ? [0, 1] : [0]).map(() => startGatewayChild(config, dynamo.url)),
  );
  const [gateway, other] = gateways as [(typeof gateways)[number], (typeof gateways)[number] | undefined];
  // The official clients, as in `npm run bench`: v1 in a 2025 session without input capabilities, v2 pinned to 2026-07-28.
  const client =
    mode === 'round'
      ? await legacyClient(gateway.url, { answerUrl: other?.url })
      : mode === 'legacy'
        ? await legacyClient(gateway.url, { elicitation: false })
        : await modernClient(gateway.url);
  const [tool, args] = mode === 'round' ? ['t___use_aws', { command: 'ls' }] : ['t___echo', { text: 'x' }];
  for (let i = 0; i < 300; i++) await client.call(tool, args);
  const files = gateways.map((_, i) => join(dir, `calls-${i}.cpuprofile`));
  await Promise.all(gateways.map((g) => g.ask('profile-start', /profile started/)));
  for (let i = 0; i < calls; i++) await client.call(tool, args);
  await Promise.all(gateways.map((g, i) => g.ask(`profile-stop ${files[i]}`, /profile written/)));
  await client.close();
  await Promise.all([...gateways.map((g) => g.stop()), target.stop(), dynamo.stop()]);
  const profiles = files.map(
    (file) =>
      JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] },
  );
  const self = new Map<string, number>();
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    profile.samples.forEach((id, i) => {
      const f = byId.get(id)!.callFrame;
      const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, 'nm:').replace(/^.*?\/lambda\//, 'lambda/')}:${f.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
    });
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = self.get('(idle) :0') ?? 0;
  console.log(
    `${mode}: ${calls} calls, ${(total / 1000).toFixed(0)} ms of samples, busy ${((total - idle) / 1000 / calls).toFixed(3)} ms per call`,
  );
  const area = (url: string) =>
    url.includes('/lambda/')
      ? url.replace(/^.*?\/lambda\//, 'lambda/')
      : url.includes('node_modules/')
        ? `nm:${url
            .split('node_modules/')
            .pop()!
            .split('/')
            .slice(0, url.includes('node_modules/@') ? 2 : 1)
            .join('/')}`
        : url.startsWith('node:')
          ? 'node internals'
          : '';
  // Inclusive time per module file of the gateway's own code and its libraries.
  const inclusive = new Map<string, number>();
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parentOf = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
    profile.samples.forEach((id, i) => {
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
        const a = area(byId.get(at)!.callFrame.url);
        if (a && !seen.has(a)) {
          seen.add(a);
          inclusive.set(a, (inclusive.get(a) ?? 0) + (profile.timeDeltas[i] ?? 0));
        }
      }
    });
  }
  console.log('inclusive by module:');
  for (const [key, us] of [...inclusive.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20)) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000 / calls).toFixed(3)} ms/call  ${key}`);
  }
  console.log('self time:');
  for (const [key, us] of [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, Number(process.env.PROFILE_TOP ?? 25))) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${key}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
