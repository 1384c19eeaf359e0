import { createLogger } from '../../lambda/observability/logger';
import { withModernGateway } from '../modern/helpers';
import { aheadClock } from '../support/fake-clock';
import { startTasksServer } from '../support/servers/tasks-server';
import { callWithTasks, getTask } from '../support/tasks-client';

/**
 * A task id's life is the gateway's to count (crypto/task-ids.ts): a target whose tasks say they were
 * created a year from now (a clock far ahead, or a lie) gets ids that still expire
 * `taskIdMaxTtlSeconds` after the gateway handed them out. The gateway's clock is injected
 * (`clock`, the whole gateway's): the test moves it past the cap instead of waiting.
 */

jest.setTimeout(30_000);

const CAP_S = 60;
const A_YEAR_MS = 365 * 86_400_000;
let skewMs = 0;
const gw = withModernGateway(
  (targets) => ({
    targets: [{ name: 'jobs', url: targets.jobs.url }],
    taskIdMaxTtlSeconds: CAP_S,
  }),
  {
    // ttlMs null: the target keeps its tasks forever, so only the gateway's cap bounds the id.
    targets: { jobs: () => startTasksServer({ ttlMs: null, createdAtSkewMs: A_YEAR_MS }) },
    localServer: { logger: createLogger('SILENT'), clock: aheadClock(() => skewMs) },
  },
);

afterEach(() => {
  skewMs = 0;
});

it("refuses a task's id once taskIdMaxTtlSeconds passed on the gateway's clock, though the target says the task is not yet created", async () => {
  const created = await callWithTasks(gw.url, 'jobs___forever', {});
  expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
  expect(Date.parse(created.result!.createdAt as string)).toBeGreaterThan(Date.now() + A_YEAR_MS / 2);
  const id = created.result!.taskId as string;

  const polled = await getTask(gw.url, id);
  expect(polled.result).toMatchObject({ taskId: id, status: 'working' });

  const gets = () => gw.targets.jobs.received().filter((r) => r.method === 'tasks/get').length;
  const before = gets();
  skewMs = (CAP_S + 1) * 1000; // past the cap (expiry is kept in whole seconds)
  const refused = await getTask(gw.url, id);
  expect(refused.status).toBe(200);
  expect(refused.error).toMatchObject({ code: -32602, data: { reason: 'expired' } });
  expect(gets()).toBe(before);
});
