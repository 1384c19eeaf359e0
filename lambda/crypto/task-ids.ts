import type { Clock } from '../scheduling/clock';
import type { SealedBox } from './sealed-box';

/**
 * The task ids the gateway hands a 2026-07-28 client for a target's task (Tasks extension,
 * `resultType: "task"`). The client holds the id; the gateway stores nothing. It is the target's own
 * id sealed (AES-256-GCM, the same keys as `requestState`, crypto/sealed-box.ts) with the target it
 * belongs to, the principal it was created for and an expiry, so `tasks/get`, `tasks/update` and
 * `tasks/cancel` route by the id alone, and an id that was altered, made up, sealed for another
 * principal, or past its time is refused before any target is called. Namespaced by target: two
 * targets' equal task ids are different gateway ids, and an id never reaches another target.
 */

export interface TaskBinding {
  /** The target that created the task. */
  target: string;
  /** The target's own task id. */
  taskId: string;
  principal: string;
}

export type TaskIdRejection = 'malformed' | 'expired' | 'principal';

interface Payload {
  /** Not a requestState (whose payload says `v: 1`): neither opens as the other. */
  v: 'task1';
  t: string;
  i: string;
  p: string;
  /** Expiry, epoch seconds. */
  e: number;
}

export class TaskIdSealer {
  constructor(
    private readonly box: SealedBox,
    /** taskIdMaxTtlSeconds: the longest an id stays valid, whatever the target's ttlMs. */
    private readonly maxTtlSeconds: number,
    /** The gateway's clock (./scheduling/clock.ts): ids expire by its time. */
    private readonly clock: Clock,
  ) {}

  /**
   * The gateway's id for a target's task: valid while the target keeps the task (`ttlMs` from its
   * `createdAt`, as the spec gives it), at most `maxTtlSeconds` from its creation; null ttl: the maximum.
   * The gateway's clock bounds it: a `createdAt` later than the gateway's now (a target's clock ahead, or
   * a lie) counts as now, so no id outlives now + `maxTtlSeconds` (nor now + `ttlMs`), whatever the target
   * says. The same task sealed again (another poll, another instance) gets the same id: everything sealed
   * comes from the task itself and the seal is deterministic, so a client matching notifications or
   * listings to its tasks by id finds one id per task. A task that names no `createdAt`, or one still in
   * the future, is counted from now (its id then differs from one seal to the next).
   */
  seal(binding: TaskBinding, task: { ttlMs?: unknown; createdAt?: unknown }, now = this.clock.now()): string {
    const created = typeof task.createdAt === 'string' ? Date.parse(task.createdAt) : Number.NaN;
    const from = Number.isFinite(created) ? Math.min(created, now) : now;
    const cap = Math.floor(from / 1000) + this.maxTtlSeconds;
    const ends =
      typeof task.ttlMs === 'number' && Number.isFinite(task.ttlMs) && task.ttlMs >= 0
        ? Math.ceil((from + task.ttlMs) / 1000)
        : cap;
    const payload: Payload = {
      v: 'task1',
      t: binding.target,
      i: binding.taskId,
      p: binding.principal,
      e: Math.min(ends, cap),
    };
    return this.box.seal(payload, { deterministic: true });
  }

  open(
    sealed: unknown,
    principal: string,
    now = this.clock.now(),
  ): { ok: true; task: TaskBinding } | { ok: false; reason: TaskIdRejection } {
    const payload = this.box.open(sealed) as Partial<Payload> | undefined;
    if (
      payload?.v !== 'task1' ||
      typeof payload.t !== 'string' ||
      typeof payload.i !== 'string' ||
      typeof payload.p !== 'string' ||
      typeof payload.e !== 'number'
    ) {
      return { ok: false, reason: 'malformed' };
    }
    if (payload.e * 1000 <= now) return { ok: false, reason: 'expired' };
    if (payload.p !== principal) return { ok: false, reason: 'principal' };
    return { ok: true, task: { target: payload.t, taskId: payload.i, principal: payload.p } };
  }
}
