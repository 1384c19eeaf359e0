import type { ChildProcess } from 'node:child_process';

/**
 * Resolves with the first match of `pattern` in what a child process wrote (`text()`, kept up to date
 * by the caller's own `data` listeners, registered before this), looked at on each write; rejects when
 * the process has ended (its output closed) without it, or after `timeoutMs`.
 */
export function outputMatching(
  child: ChildProcess,
  text: () => string,
  pattern: RegExp,
  timeoutMs = 30_000,
): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const look = () => {
      const match = pattern.exec(text());
      if (!match) return false;
      done();
      resolve(match);
      return true;
    };
    const fail = (why: string) => () => {
      if (look()) return;
      done();
      reject(new Error(`${why} before the output showed ${pattern}:\n${text()}`));
    };
    const ended = fail('the process ended');
    const timer = setTimeout(fail(`${timeoutMs} ms passed`), timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child.stdout?.off('data', look);
      child.stderr?.off('data', look);
      child.off('close', ended);
    };
    child.stdout?.on('data', look);
    child.stderr?.on('data', look);
    child.once('close', ended);
    if (!look() && child.exitCode !== null && child.stdout?.readableEnded !== false) ended();
  });
}
