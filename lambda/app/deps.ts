import type { InboundAuth } from '../auth/inbound';
import type { ConsentRoutes } from '../connections/consent-routes';
import type { LegacyDeps } from '../legacy/deps';
import type { ModernDeps } from '../modern/deps';

/** What the gateway is built from: both paths' parts and inbound auth. Tests assemble it with real or fake parts. */
export interface GatewayDeps extends LegacyDeps, ModernDeps {
  /** Inbound authentication: the principal of each request (lambda/auth/). */
  auth: InboundAuth;
  /** The consent pages and `/connections` (only when a target has `userOAuth`). */
  consentRoutes?: ConsentRoutes;
}
