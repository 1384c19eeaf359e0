import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../support/mcp-http';
import { withFileLock } from '../support/setup/lock';

/** The set-up's lock: two runs at once take turns; a lock its process left behind does not stop a run. */

let dir: string;
let lock: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'setup-lock-'));
  lock = join(dir, '.test-setup.lock');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('two at once: the second waits for the first to end, told once who holds it, then runs', async () => {
  const events: string[] = [];
  let endFirst!: () => void;
  const first = withFileLock(lock, async () => {
    events.push('first runs');
    await new Promise<void>((resolve) => {
      endFirst = resolve;
    });
    events.push('first ends');
  });
  const second = withFileLock(
    lock,
    async () => {
      events.push('second runs');
    },
    { pollMs: 5, waiting: (holder) => events.push(`waiting for ${holder}`) },
  );
  // The second finds the lock held, and waits.
  await eventually(() => expect(events).toEqual(['first runs', `waiting for ${process.pid}`]));
  endFirst();
  await Promise.all([first, second]);
  expect(events).toEqual(['first runs', `waiting for ${process.pid}`, 'first ends', 'second runs']);
  expect(readdirSync(dir)).toEqual([]);
});

test('a lock whose process is gone is taken over', async () => {
  const gone = spawnSync(process.execPath, ['-e', '0']).pid;
  writeFileSync(lock, String(gone));
  const waited: number[] = [];
  await expect(withFileLock(lock, async () => 'ran', { waiting: (pid) => waited.push(pid) })).resolves.toBe('ran');
  expect(waited).toEqual([]);
  expect(readdirSync(dir)).toEqual([]);
});

test('a task that throws releases the lock', async () => {
  await expect(
    withFileLock(lock, async () => {
      throw new Error('pip broke');
    }),
  ).rejects.toThrow('pip broke');
  expect(existsSync(lock)).toBe(false);
  await expect(withFileLock(lock, async () => 'next')).resolves.toBe('next');
});
