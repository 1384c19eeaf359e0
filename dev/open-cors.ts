import { ConfigError, type GatewayConfig } from '../lambda/config/schema';

/**
 * `cors.allowedOrigins: ["*"]` with auth `none` on the local server lets any web page the user opens
 * drive the gateway (and, through it, every target): the browser sends the request, the Origin check
 * lets `*` past, and nothing asks who is calling. A loopback bind does not help — the page runs on the
 * user's own machine. So the combination is refused at start, with one line, unless the configuration
 * says it is intended (`cors.allowAnyOriginWithoutAuth`). Deployed, auth `none` puts the function URL
 * behind SigV4 (AWS_IAM), which a web page cannot sign, so only the local server checks this.
 */
export function refuseOpenCorsWithoutAuth(config: Pick<GatewayConfig, 'auth' | 'cors'>): void {
  if (config.auth.type !== 'none' || !config.cors.allowedOrigins.includes('*')) return;
  if (config.cors.allowAnyOriginWithoutAuth) return;
  throw new ConfigError(
    'cors.allowedOrigins "*" with auth "none" lets any web page you open call this gateway and its targets; list the origins that may call, set auth, or set cors.allowAnyOriginWithoutAuth: true if that is intended',
  );
}
