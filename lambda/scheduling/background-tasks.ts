import type { GatewayLogger } from '../observability/logger';
import { describeError } from '../observability/logger';

/**
 * The work an owner (a relayed call, a bridged call, a session's standalone streams) starts without
 * awaiting it: a renewal, a look at DynamoDB when a timer fires, reading a stream. As the MCP SDK's
 * `Protocol` routes every failure it does not await to one `onerror`
 * (https://github.com/modelcontextprotocol/typescript-sdk/blob/main/src/shared/protocol.ts), every such
 * task ends here: a failure is logged once, as `<label> failed` with the owner's keys (never a
 * message's content: labels and keys name what failed, not what it carried), and the owner awaits
 * drain() before its cleanup is done, so on Lambda nothing it started still runs after the response.
 */
export class BackgroundTasks {
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly logger: Pick<GatewayLogger, 'warn'>,
    /** Added to each failure's log line (which call). */
    private readonly context: Record<string, unknown> = {},
  ) {}

  /**
   * Starts `task` now (its synchronous part runs before run() returns); its failure is logged, never
   * thrown. The promise returned settles when it has (never rejects): for a caller that waits for it.
   */
  run(label: string, task: () => unknown): Promise<void> {
    const settled = (async () => {
      try {
        await task();
      } catch (error) {
        this.logger.warn(`${label} failed`, { ...this.context, error: describeError(error) });
      }
    })();
    this.running.add(settled);
    void settled.finally(() => this.running.delete(settled));
    return settled;
  }

  /** How many tasks are still running. */
  get pending(): number {
    return this.running.size;
  }

  /** Resolves once no task runs, including tasks started while waiting. */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }
}
