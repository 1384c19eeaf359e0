import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * Child processes that end with the process that started them, even when it is killed outright.
 *
 * An execution environment of the local Lambda runs in a session of its own (so a terminal's Ctrl-C
 * reaches the front end only, which shuts it down in order) and is stopped (SIGSTOP) between
 * invocations; when its parent dies, the kernel neither signals it nor wakes it. So one small guard
 * process per parent (guard.mjs, itself in a session of its own) holds a pipe from the parent, and
 * when that pipe ends — the parent has exited, however — it SIGKILLs every child it was told of and has
 * not been told is gone.
 */
export class OrphanGuard {
  private guard?: ChildProcess;
  private failed = false;

  /** `pid` ends when this process ends. */
  watch(pid: number): void {
    this.send(`+${pid}`);
  }

  /** `pid` has exited (its number may be reused): the guard forgets it. */
  forget(pid: number): void {
    this.send(`-${pid}`);
  }

  private send(line: string): void {
    const stdin = this.started()?.stdin;
    if (stdin?.writable) stdin.write(`${line}\n`);
  }

  private started(): ChildProcess | undefined {
    if (this.guard || this.failed) return this.guard;
    const guard = spawn(process.execPath, [join(__dirname, 'guard.mjs')], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
    });
    // Without a guard the children still end with an orderly shutdown; only SIGKILL would leave them.
    guard.on('error', () => {
      this.failed = true;
      this.guard = undefined;
    });
    guard.stdin?.on('error', () => undefined);
    // The guard neither keeps this process alive nor is waited for: it ends when this process does.
    guard.unref();
    (guard.stdin as { unref?: () => void } | null)?.unref?.();
    this.guard = guard;
    return guard;
  }
}

/** One guard for the whole process: every emulator's children share it. */
export const orphanGuard = new OrphanGuard();
