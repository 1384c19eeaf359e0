import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

export interface LockOptions {
  /** Told once when the lock is held by another process (which is then waited for). */
  waiting?: (holder: number) => void;
  /** How often a waiter looks again. */
  pollMs?: number;
}

/**
 * Runs `task` holding a lock file that names this process, so two test runs started at once prepare
 * the same venv one after the other (the second then finds it ready). The file appears whole (written
 * beside, then hard-linked into place, which fails if it exists); a lock whose process is gone is
 * taken over.
 */
export async function withFileLock<T>(path: string, task: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const { waiting, pollMs = 250 } = options;
  let told = false;
  while (!acquire(path)) {
    const holder = holderOf(path);
    if (holder !== undefined && !alive(holder)) {
      takeOverFrom(path, holder);
      continue;
    }
    if (holder !== undefined && !told) {
      told = true;
      waiting?.(holder);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  try {
    return await task();
  } finally {
    rmSync(path, { force: true });
  }
}

function acquire(path: string): boolean {
  const mine = `${path}.${process.pid}`;
  writeFileSync(mine, String(process.pid));
  try {
    linkSync(mine, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    rmSync(mine, { force: true });
  }
}

function holderOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8'));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined; // released meanwhile
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user holds it, alive.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes a dead process's lock. It is first moved aside and read again: another waiter may have
 * taken it over and locked anew in between, and that fresh lock is put back, not removed.
 */
function takeOverFrom(path: string, dead: number): void {
  const aside = `${path}.stale.${process.pid}`;
  try {
    renameSync(path, aside);
  } catch {
    return; // gone meanwhile: acquire again
  }
  if (holderOf(aside) !== dead) {
    try {
      linkSync(aside, path);
    } catch {
      // Locked again meanwhile by a third: that lock stands.
    }
  }
  rmSync(aside, { force: true });
}
