import { declaresTasks, TASKS_EXTENSION } from './meta';
import type { LegacyClientCapabilities, ModernClientCapabilities } from './types';
import { isLegacyVersion, supportsFeature } from './versions';

/**
 * What the gateway may declare to a target and relay to a client: only what the client declared,
 * only what the protocol version allows, and only what can be relayed verbatim (elicitation
 * form/url, sampling with its context/tools flags, roots). Extensions and experimental capabilities are
 * never passed on; 2025-11-25's `tasks` only as far as the gateway relays it (below). The same filter
 * decides what is declared to a target and what is relayed back, so both sides agree.
 */

type AnyClientCapabilities = LegacyClientCapabilities | ModernClientCapabilities;

/** `elicitation: {}` means form only (both eras). */
export function elicitationModes(capabilities: AnyClientCapabilities): { form: boolean; url: boolean } {
  const elicitation = capabilities.elicitation as { form?: object; url?: object } | undefined;
  if (!elicitation) return { form: false, url: false };
  const explicit = elicitation.form !== undefined || elicitation.url !== undefined;
  return { form: explicit ? elicitation.form !== undefined : true, url: elicitation.url !== undefined };
}

/** Declared to a legacy target at `initialize` (and relayed to the client) for a session of `protocolVersion`. */
export function capabilitiesForLegacyTarget(
  client: AnyClientCapabilities,
  protocolVersion: string,
): LegacyClientCapabilities {
  const declared: LegacyClientCapabilities = {};
  const modes = elicitationModes(client);
  const elicitation: NonNullable<LegacyClientCapabilities['elicitation']> = {};
  if (modes.form && supportsFeature(protocolVersion, 'formElicitation')) elicitation.form = {};
  if (modes.url && supportsFeature(protocolVersion, 'urlElicitation')) elicitation.url = {};
  if (Object.keys(elicitation).length) declared.elicitation = elicitation;
  const sampling = client.sampling as { context?: object; tools?: object } | undefined;
  if (sampling) {
    declared.sampling = {
      ...(sampling.context ? { context: {} } : {}),
      ...(sampling.tools && supportsFeature(protocolVersion, 'samplingTools') ? { tools: {} } : {}),
    };
  }
  const roots = client.roots as { listChanged?: boolean } | undefined;
  if (roots) declared.roots = roots.listChanged ? { listChanged: true } : {};
  // 2025-11-25's tasks (experimental): declared when the client declared them, so the target may answer
  // its task-augmented tools/call with a task (legacy/tasks.ts relays it). Without what the client may
  // be asked: a target's task-augmented elicitation or sampling, and its tasks/get, tasks/list or
  // tasks/cancel to the client, are not relayed (the client's tasks would have to be too).
  if (declaresLegacyTasks(client, protocolVersion)) declared.tasks = {};
  return declared;
}

/**
 * Whether a client of `protocolVersion` declared 2025-11-25's tasks: in the core protocol of that
 * version only (experimental; 2026-07-28 moved them to an extension, `declaresTasks`).
 */
export function declaresLegacyTasks(client: AnyClientCapabilities, protocolVersion: string): boolean {
  const tasks = (client as LegacyClientCapabilities).tasks;
  return (
    tasks !== undefined && tasks !== null && isLegacyVersion(protocolVersion) && protocolVersion >= CORE_TASKS_SINCE
  );
}

const CORE_TASKS_SINCE = '2025-11-25';

/** Declared in `_meta` to a modern target for one request. */
export function capabilitiesForModernTarget(client: AnyClientCapabilities): ModernClientCapabilities {
  const declared: ModernClientCapabilities = {};
  const modes = elicitationModes(client);
  if (modes.form || modes.url)
    declared.elicitation = { ...(modes.form ? { form: {} } : {}), ...(modes.url ? { url: {} } : {}) };
  const sampling = client.sampling as { context?: object; tools?: object } | undefined;
  if (sampling)
    declared.sampling = { ...(sampling.context ? { context: {} } : {}), ...(sampling.tools ? { tools: {} } : {}) };
  if (client.roots) declared.roots = {};
  // The Tasks extension goes to a target only when the client declared it on this request (the spec:
  // a server MUST NOT answer with a task a client that did not): the gateway relays tasks as they are.
  if (declaresTasks(client)) (declared as { extensions?: object }).extensions = { [TASKS_EXTENSION]: {} };
  return declared;
}

/** A 2025 session's capabilities as a modern target may see them (what its version allows, in the 2026 shape). */
export function legacySessionAsModern(
  client: LegacyClientCapabilities,
  protocolVersion: string,
): ModernClientCapabilities {
  return capabilitiesForModernTarget(capabilitiesForLegacyTarget(client, protocolVersion));
}

/** The capability a request of the target needs from the client, or undefined when the client declared it. */
export function missingCapability(
  client: AnyClientCapabilities,
  method: string,
  params: Record<string, unknown> | undefined,
): ModernClientCapabilities | undefined {
  switch (method) {
    case 'elicitation/create': {
      const modes = elicitationModes(client);
      if (params?.mode === 'url') return modes.url ? undefined : { elicitation: { url: {} } };
      return modes.form ? undefined : { elicitation: { form: {} } };
    }
    case 'sampling/createMessage': {
      const sampling = client.sampling as { tools?: object } | undefined;
      if (!sampling) return { sampling: {} };
      return params?.tools !== undefined && !sampling.tools ? { sampling: { tools: {} } } : undefined;
    }
    case 'roots/list':
      return client.roots ? undefined : { roots: {} };
    default:
      // Not a request kind the spec defines: nothing the client could declare.
      return { experimental: { [method]: {} } };
  }
}

/** Whether a request of the target may be relayed to a client that declared `capabilities`. */
export function clientAccepts(
  capabilities: AnyClientCapabilities,
  method: string,
  params: Record<string, unknown> | undefined,
): boolean {
  return missingCapability(capabilities, method, params) === undefined;
}

/** Merges capability objects one level deep (`{elicitation:{form}}` + `{elicitation:{url}}`). */
export function mergeCapabilities(a: ModernClientCapabilities, b: ModernClientCapabilities): ModernClientCapabilities {
  const out: Record<string, unknown> = { ...a };
  for (const [key, value] of Object.entries(b)) {
    out[key] = { ...((out[key] as object | undefined) ?? {}), ...(value as object) };
  }
  return out as ModernClientCapabilities;
}

/** Whether the client declared anything a server may ask of it (elicitation, sampling, roots). */
export function declaresInput(capabilities: AnyClientCapabilities): boolean {
  return (
    capabilities.elicitation !== undefined || capabilities.sampling !== undefined || capabilities.roots !== undefined
  );
}

/**
 * Whether a server's declared capabilities let it send notifications outside a request's own stream
 * (2025 servers: on the session's GET stream): log messages (`logging`), list changes (`listChanged`
 * of tools, prompts or resources), resource updates (`resources.subscribe`), task status (`tasks`).
 * Unknown (a session stored without them): assumed so.
 */
export function sendsOutsideCalls(serverCapabilities: Record<string, unknown> | undefined): boolean {
  if (!serverCapabilities) return true;
  if (serverCapabilities.logging !== undefined) return true;
  // `notifications/tasks/status`: the v1 SDK server sends it on the GET stream.
  if (serverCapabilities.tasks !== undefined) return true;
  const declared = (key: string) =>
    serverCapabilities[key] as { listChanged?: boolean; subscribe?: boolean } | undefined;
  return (
    ['tools', 'prompts', 'resources'].some((key) => declared(key)?.listChanged === true) ||
    declared('resources')?.subscribe === true
  );
}
