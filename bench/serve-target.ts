/** A demo target in its own process, for benchmarks: `tsx bench/serve-target.ts [legacy|modern]`; prints `ready <url>`. */
import { startDemoTarget } from '../lambda/local/demo-target';
import { startModernDemoTarget } from '../lambda/local/modern-demo-target';

const kind = process.argv[2] ?? 'legacy';
void (kind === 'modern' ? startModernDemoTarget() : startDemoTarget()).then((target) => {
  console.log(`ready ${target.url}`);
  process.on('SIGTERM', () => void target.close().then(() => process.exit(0)));
});
