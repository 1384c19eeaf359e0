import type { ClientCapabilities as LegacyClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import type { ClientCapabilities, InputRequest } from '@modelcontextprotocol/server';

/**
 * Client capabilities on the 2026-07-28 path, declared per request in `_meta`. The gateway passes
 * on only what it can relay verbatim (elicitation form/url, sampling with its context/tools flags,
 * roots) and never more than the client declared; extensions, experimental and tasks stay behind.
 */

export function elicitationModes(capabilities: ClientCapabilities | LegacyClientCapabilities): {
  form: boolean;
  url: boolean;
} {
  const elicitation = capabilities.elicitation as { form?: object; url?: object } | undefined;
  if (!elicitation) return { form: false, url: false };
  const explicit = elicitation.form !== undefined || elicitation.url !== undefined;
  // `elicitation: {}` means form only (both eras).
  return { form: explicit ? elicitation.form !== undefined : true, url: elicitation.url !== undefined };
}

/** What the gateway declares to a 2026-07-28 target for this request. */
export function relayableCapabilities(client: ClientCapabilities): ClientCapabilities {
  const declared: ClientCapabilities = {};
  const modes = elicitationModes(client);
  if (modes.form || modes.url)
    declared.elicitation = { ...(modes.form ? { form: {} } : {}), ...(modes.url ? { url: {} } : {}) };
  const sampling = client.sampling as { context?: object; tools?: object } | undefined;
  if (sampling)
    declared.sampling = { ...(sampling.context ? { context: {} } : {}), ...(sampling.tools ? { tools: {} } : {}) };
  if (client.roots) declared.roots = {};
  return declared;
}

/** The same set in the 2025 shape, for a legacy target session (a modern caller of a 2025-only target). */
export function legacyCapabilities(client: ClientCapabilities): LegacyClientCapabilities {
  return relayableCapabilities(client) as LegacyClientCapabilities;
}

/** The capability an input request needs, or undefined when the client declared it. */
export function missingCapability(
  client: ClientCapabilities,
  request: Pick<InputRequest, 'method' | 'params'>,
): ClientCapabilities | undefined {
  const params = (request.params ?? {}) as Record<string, unknown>;
  switch (request.method) {
    case 'elicitation/create': {
      const modes = elicitationModes(client);
      if (params.mode === 'url') return modes.url ? undefined : { elicitation: { url: {} } };
      return modes.form ? undefined : { elicitation: { form: {} } };
    }
    case 'sampling/createMessage': {
      const sampling = client.sampling as { tools?: object } | undefined;
      if (!sampling) return { sampling: {} };
      return params.tools !== undefined && !sampling.tools ? { sampling: { tools: {} } } : undefined;
    }
    case 'roots/list':
      return client.roots ? undefined : { roots: {} };
    default:
      // Not an input request kind the spec defines: nothing the client could declare.
      return { experimental: { [String(request.method)]: {} } };
  }
}
