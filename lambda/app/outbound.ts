import type { GatewayConfig } from '../config/schema';
import { OutboundPolicy } from '../outbound/policy';

/**
 * The outbound policy of this configuration: its own origins (targets, configured authorization
 * servers and metadata, the JWT issuer's discovery) and `outbound.allowedOrigins` are the operator's choice.
 */
export function outboundPolicyOf(config: GatewayConfig, runtimeApi?: string): OutboundPolicy {
  const named = [...config.outbound.allowedOrigins];
  for (const target of config.targets) {
    named.push(target.url);
    if (target.userOAuth?.authorizationServer) named.push(target.userOAuth.authorizationServer);
    if (target.userOAuth?.resourceMetadataUrl) named.push(target.userOAuth.resourceMetadataUrl);
  }
  if (config.auth.type === 'jwt') named.push(config.auth.discoveryUrl);
  return new OutboundPolicy({ allowedOrigins: named, runtimeApi });
}
