/**
 * `npx tsx bench/profile.ts [legacy|stateless] [calls]`: runs calls through a gateway process started
 * with --cpu-prof and prints where its CPU time went (self time by function, top 25). For finding
 * what to optimize; the figures to publish come from `npm run bench`.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCountedDynamo } from '../test/support/dynamo';
import { initSession, post, readMessage } from '../test/support/mcp-http';
import { startChild, startTarget } from './processes';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

async function main(): Promise<void> {
  const mode = process.argv[2] ?? 'stateless';
  const calls = Number(process.argv[3] ?? 2000);
  const dir = mkdtempSync(join(tmpdir(), 'prof-'));
  const dynamo = await startCountedDynamo();
  const target = await startTarget(mode === 'legacy' ? 'legacy' : 'modern');
  const configDir = mkdtempSync(join(tmpdir(), 'profcfg-'));
  mkdirSync(configDir, { recursive: true });
  writeFileSync(
    join(configDir, 'c.json'),
    JSON.stringify({ targets: [{ name: 't', url: target.url }], requestStateKeys: { current: 'p'.repeat(40) } }),
  );
  const gateway = await startChild(
    [
      'lambda/local/cli.ts',
      '--port',
      '0',
      '--no-demo',
      '--config',
      join(configDir, 'c.json'),
      '--dynamodb-endpoint',
      dynamo.endpoint,
    ],
    /MCP gateway ready: (\S+)/,
    {},
    ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  );
  const META = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const session = mode === 'legacy' ? await initSession(gateway.url) : undefined;
  for (let i = 0; i < calls; i++) {
    const headers = session?.headers ?? {
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 't___echo',
    };
    const params = { name: 't___echo', arguments: { text: 'x' }, ...(session ? {} : { _meta: META }) };
    await readMessage(await post(gateway.url, headers, { jsonrpc: '2.0', id: i, method: 'tools/call', params }));
  }
  await gateway.stop();
  await target.stop();
  await dynamo.close();
  // One profile per thread (tsx's loader runs on its own): take the busiest.
  const profiles = readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map(
      (f) =>
        JSON.parse(readFileSync(join(dir, f), 'utf8')) as {
          nodes: ProfileNode[];
          samples: number[];
          timeDeltas: number[];
        },
    );
  const busy = (p: (typeof profiles)[number]) => {
    const idle = new Set(p.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
    return p.samples.filter((id) => !idle.has(id)).length;
  };
  const profile = profiles.sort((a, b) => busy(b) - busy(a))[0];
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    const f = node.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, 'nm:').replace(/^.*\/main\//, '')}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  console.log(`${mode}: ${calls} calls, profile ${(total / 1000).toFixed(0)} ms of samples`);
  // Inclusive time per module file of the gateway's own code and its libraries.
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const area = (url: string) =>
    url.includes('/lambda/')
      ? url.replace(/^.*\/main\//, '')
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
  const inclusive = new Map<string, number>();
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
  console.log('inclusive by module:');
  for (const [key, us] of [...inclusive.entries()].sort((a, b) => b[1] - a[1]).slice(0, 20)) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000 / calls).toFixed(3)} ms/call  ${key}`);
  }
  console.log('self time:');
  for (const [key, us] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${key}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
