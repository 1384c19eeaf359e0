import type { GatewayLogger } from '../../../lambda/observability/logger';
import { BackgroundTasks } from '../../../lambda/scheduling/background-tasks';

/**
 * The task runner (scheduling/background-tasks.ts): a failure is logged once with its label and the
 * owner's keys, never thrown; it counts what still runs; drain() waits for all, also for tasks
 * started while draining.
 */

function recordingLogger() {
  const warnings: Array<{ message: string; extra: unknown }> = [];
  const log: Pick<GatewayLogger, 'warn'> = {
    warn: (message, ...extra) => void warnings.push({ message: String(message), extra: extra[0] }),
  };
  return { log, warnings };
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

describe('BackgroundTasks', () => {
  it('logs a failure once with its label and the keys', async () => {
    const { log, warnings } = recordingLogger();
    const tasks = new BackgroundTasks(log, { sessionId: 's-1' });
    tasks.run('renewing the lease', async () => {
      throw new Error('DynamoDB down');
    });
    tasks.run('a synchronous throw', () => {
      throw new TypeError('bad');
    });
    await tasks.drain();
    // A synchronous throw is caught at once; the rejection a tick later.
    expect(warnings).toEqual([
      {
        message: 'a synchronous throw failed',
        extra: { sessionId: 's-1', error: { name: 'TypeError', message: 'bad' } },
      },
      {
        message: 'renewing the lease failed',
        extra: { sessionId: 's-1', error: { name: 'Error', message: 'DynamoDB down' } },
      },
    ]);
    expect(tasks.pending).toBe(0);
  });

  it('runs the synchronous part at once and counts what still runs', async () => {
    const { log, warnings } = recordingLogger();
    const tasks = new BackgroundTasks(log);
    const first = gate();
    const steps: string[] = [];
    tasks.run('first', async () => {
      steps.push('started');
      await first.opened;
      steps.push('done');
    });
    expect(steps).toEqual(['started']);
    expect(tasks.pending).toBe(1);
    first.open();
    await tasks.drain();
    expect(steps).toEqual(['started', 'done']);
    expect(tasks.pending).toBe(0);
    expect(warnings).toEqual([]);
  });

  it('drains tasks started while draining', async () => {
    const { log } = recordingLogger();
    const tasks = new BackgroundTasks(log);
    const outer = gate();
    const inner = gate();
    const steps: string[] = [];
    tasks.run('outer', async () => {
      await outer.opened;
      tasks.run('inner', async () => {
        await inner.opened;
        steps.push('inner');
      });
      steps.push('outer');
    });
    let drained = false;
    const draining = tasks.drain().then(() => {
      drained = true;
    });
    outer.open();
    await new Promise((resolve) => setImmediate(resolve));
    expect(steps).toEqual(['outer']);
    expect(drained).toBe(false);
    inner.open();
    await draining;
    expect(steps).toEqual(['outer', 'inner']);
  });

  it('drains at once when nothing runs', async () => {
    const tasks = new BackgroundTasks(recordingLogger().log);
    await tasks.drain();
    expect(tasks.pending).toBe(0);
  });
});
