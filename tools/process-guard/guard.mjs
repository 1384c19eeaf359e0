// The orphan guard's own process (see orphan-guard.ts beside it). Its stdin is a pipe from the process
// that started it, which writes `+PID` for each child to guard and `-PID` once that child is gone. The
// pipe ends when that process ends, however it ends (SIGKILL included): then every child still listed
// is killed. SIGKILL, because a frozen (stopped) child could not act on anything gentler.

import { createInterface } from 'node:readline';

const guarded = new Set();
createInterface({ input: process.stdin })
  .on('line', (line) => {
    const pid = Number(line.slice(1));
    if (!Number.isInteger(pid) || pid <= 0) return;
    if (line.startsWith('+')) guarded.add(pid);
    else if (line.startsWith('-')) guarded.delete(pid);
  })
  .on('close', () => {
    for (const pid of guarded) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    process.exit(0);
  });
