import type { Catalog } from '../catalog/catalog';
import type { GatewayConfig } from '../config/schema';
import type { GatewayLogger } from '../observability/logger';
import type { Implementation } from '../protocol/types';
import type { Clock } from '../scheduling/clock';
import type { Targets } from '../targets/targets';
import type { ActiveCalls } from './active-calls';

/** What both era paths are built from (each path adds its own: the store, or the sealer). */
export interface SharedDeps {
  config: GatewayConfig;
  logger: GatewayLogger;
  targets: Targets;
  catalog: Catalog;
  /** The gateway as a server (initialize results, 2026 `serverInfo`). */
  serverInfo: Implementation;
  /** SSE keep-alive comment interval while a relayed call waits. */
  keepAliveMs: number;
  /**
   * The gateway's one clock: every time it reads and every timer it sets (Node's, chosen once at
   * bootstrap; tests hand in a fake one).
   */
  clock: Clock;
  /** The calls this instance holds, both eras: a cancellation stops them, a shutdown ends them (./active-calls.ts). */
  activeCalls: ActiveCalls;
}
