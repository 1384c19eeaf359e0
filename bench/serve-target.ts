/** The demo target in its own process, for benchmarks: prints `ready <url>`. */
import { startDemoTarget } from '../lambda/local/demo-target';

void startDemoTarget().then((target) => {
  console.log(`ready ${target.url}`);
  process.on('SIGTERM', () => void target.close().then(() => process.exit(0)));
});
