/**
 * A demo target in its own process, for benchmarks: `tsx bench/serve-target.ts [legacy|modern|dual]`;
 * prints `ready <url>`. `legacy`: the v1-SDK 2025-11-25 demo target (sessions, GET stream);
 * `modern`: the v2-SDK 2026-07-28-only demo target; `dual`: the same v2 server also serving 2025
 * clients (`createMcpHandler`'s default `legacy: 'stateless'`, what a v2 server gets out of the box).
 */
import { startDemoTarget } from '../examples/targets/demo-target';
import { startModernDemoTarget } from '../examples/targets/modern-demo-target';

const kind = process.argv[2] ?? 'legacy';
const started =
  kind === 'legacy'
    ? startDemoTarget()
    : startModernDemoTarget(kind === 'dual' ? { legacy: 'stateless', name: 'dual-demo-target' } : {});
void started.then((target) => {
  console.log(`ready ${target.url}`);
  process.on('SIGTERM', () => void target.close().then(() => process.exit(0)));
});
