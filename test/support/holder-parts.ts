import { createLogger, type GatewayLogger } from '../../lambda/observability/logger';
import { BackgroundTasks } from '../../lambda/scheduling/background-tasks';
import { CallTimers } from '../../lambda/scheduling/call-timers';
import { type Clock, systemClock } from '../../lambda/scheduling/clock';

/**
 * What a holder hands its parts (the lease, the claim acknowledger: lambda/pending/holder.ts): its clock,
 * its timers and its tasks. A part tested alone gets its own set, so the test can drain what it started.
 */
export function holderParts(
  clock: Clock = systemClock,
  logger: Pick<GatewayLogger, 'warn'> = createLogger('SILENT'),
): { clock: Clock; timers: CallTimers; tasks: BackgroundTasks } {
  return { clock, timers: new CallTimers(clock), tasks: new BackgroundTasks(logger) };
}
