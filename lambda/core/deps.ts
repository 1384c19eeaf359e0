import type { Implementation } from '@modelcontextprotocol/sdk/types.js';
import type { InboundAuth } from '../auth/inbound';
import type { GatewayConfig } from '../config/schema';
import type { SessionStore } from '../state/store';
import type { ModernServices } from '../stateless/services';
import type { CatalogCache } from '../targets/catalog-cache';
import type { TargetClient } from '../targets/upstream-client';
import type { GatewayLogger } from './logger';

/** What the gateway is built from; tests assemble it with real or fake parts. */
export interface GatewayDeps {
  config: GatewayConfig;
  /** Inbound authentication: the principal of each request (lambda/auth/). */
  auth: InboundAuth;
  /** Absent on purpose for the stateless path; the legacy path requires it. */
  store: SessionStore;
  targets: Map<string, TargetClient>;
  catalog: CatalogCache;
  logger: GatewayLogger;
  serverInfo: Implementation;
  /** SSE keep-alive comment interval while a relayed call waits. */
  keepAliveMs: number;
  /** 2026-07-28 services: requestState sealing, target eras, modern target clients (per instance). */
  modern: ModernServices;
}
