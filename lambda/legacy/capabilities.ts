import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';

/**
 * What the gateway may declare to a target: only what the client declared, and only what the
 * negotiated protocol version allows. Form elicitation from 2025-06-18 on, when the specification
 * introduced it (the reference page says 2025-03-26, whose schema has no elicitation; the spec wins),
 * URL mode and sampling tools from 2025-11-25. Tasks and experimental capabilities are not relayed.
 * The same filter decides what the gateway relays to the client, so both sides agree.
 */
export function capabilitiesForTarget(client: ClientCapabilities, protocolVersion: string): ClientCapabilities {
  const declared: ClientCapabilities = {};
  const modes = elicitationModes(client);
  const elicitation: NonNullable<ClientCapabilities['elicitation']> = {};
  if (modes.form && protocolVersion >= '2025-06-18') elicitation.form = {};
  if (modes.url && protocolVersion >= '2025-11-25') elicitation.url = {};
  if (Object.keys(elicitation).length) declared.elicitation = elicitation;
  if (client.sampling) {
    const sampling: NonNullable<ClientCapabilities['sampling']> = {};
    if (client.sampling.context) sampling.context = {};
    if (client.sampling.tools && protocolVersion >= '2025-11-25') sampling.tools = {};
    declared.sampling = sampling;
  }
  if (client.roots) declared.roots = client.roots.listChanged ? { listChanged: true } : {};
  return declared;
}

/** `elicitation: {}` means form only (both eras). */
export function elicitationModes(capabilities: ClientCapabilities): { form: boolean; url: boolean } {
  const elicitation = capabilities.elicitation as { form?: object; url?: object } | undefined;
  if (!elicitation) return { form: false, url: false };
  const explicit = elicitation.form !== undefined || elicitation.url !== undefined;
  return { form: explicit ? elicitation.form !== undefined : true, url: elicitation.url !== undefined };
}

/** Whether a server-to-client request may be relayed to a client that declared `capabilities`. */
export function clientAccepts(
  capabilities: ClientCapabilities,
  method: string,
  params: Record<string, unknown> | undefined,
): boolean {
  switch (method) {
    case 'elicitation/create': {
      const modes = elicitationModes(capabilities);
      return params?.mode === 'url' ? modes.url : modes.form;
    }
    case 'sampling/createMessage':
      if (!capabilities.sampling) return false;
      return params?.tools === undefined || capabilities.sampling.tools !== undefined;
    case 'roots/list':
      return capabilities.roots !== undefined;
    default:
      return false;
  }
}
