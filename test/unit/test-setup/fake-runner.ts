import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CommandResult, CommandRunner } from '../../support/setup/python-environment';

/**
 * A command runner that records what it is asked and answers as python3 and pip would: `python3 -m
 * venv <dir>` makes `<dir>/bin/python`, pip succeeds. `answers` scripts other outcomes, by program
 * (`python3`) or by the pip step (`pip`); `hold` keeps each call pending until released.
 */
export function fakeRunner(answers: { python3?: CommandResult; pip?: CommandResult } = {}) {
  const calls: Array<[string, readonly string[]]> = [];
  let running = 0;
  let mostAtOnce = 0;
  const waiting: Array<() => void> = [];
  let holding = false;
  const run: CommandRunner = async (command, args) => {
    calls.push([command, args]);
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    try {
      if (holding) await new Promise<void>((resolve) => waiting.push(resolve));
      if (command === 'python3') {
        if (answers.python3) return answers.python3;
        mkdirSync(join(args[2]!, 'bin'), { recursive: true });
        writeFileSync(join(args[2]!, 'bin', 'python'), '');
        return { status: 0, output: '' };
      }
      return answers.pip ?? { status: 0, output: '' };
    } finally {
      running--;
    }
  };
  return {
    run,
    calls,
    mostAtOnce: () => mostAtOnce,
    hold: () => {
      holding = true;
    },
    /** Lets every held call go on, and the later ones run straight through. */
    release: () => {
      holding = false;
      for (const go of waiting.splice(0)) go();
    },
    /** Whether a call is held now. */
    held: () => waiting.length,
  };
}
