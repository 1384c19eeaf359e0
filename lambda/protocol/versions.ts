/**
 * Protocol versions and eras. Two eras: "legacy" (2025-11-25 and earlier: `initialize`, sessions,
 * server-to-client requests on streams) and "modern" (2026-07-28: stateless, `_meta`, multi
 * round-trip requests). Every era decision in the gateway goes through `isModernVersion`.
 */

export type Era = 'legacy' | 'modern';

/** The first (and so far only) version of the modern era. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** Versions of the legacy era, oldest first. */
export const LEGACY_PROTOCOL_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'] as const;

export const ALL_PROTOCOL_VERSIONS = [...LEGACY_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSION] as const;

/** Served unless configured otherwise. */
export const DEFAULT_SUPPORTED_VERSIONS = ['2025-03-26', '2025-06-18', '2025-11-25', MODERN_PROTOCOL_VERSION];

/** The newest legacy version: what the gateway speaks to a legacy target when no client version applies. */
export const LATEST_LEGACY_VERSION = '2025-11-25';

const DATE_VERSION = /^\d{4}-\d{2}-\d{2}$/;

/** A protocol version string is a date (YYYY-MM-DD); anything else is no version at all. */
export function isVersionString(value: string): boolean {
  return DATE_VERSION.test(value);
}

/** The one era cut-off: 2026-07-28 or later is modern. A string that is not a version is neither era. */
export function isModernVersion(version: string): boolean {
  return isVersionString(version) && version >= MODERN_PROTOCOL_VERSION;
}

export function isLegacyVersion(version: string): boolean {
  return isVersionString(version) && version < MODERN_PROTOCOL_VERSION;
}

export function eraOf(version: string): Era {
  return isModernVersion(version) ? 'modern' : 'legacy';
}

/** The legacy versions among `supported`, newest first. */
export function legacyVersionsOf(supported: readonly string[]): string[] {
  return supported.filter(isLegacyVersion).sort().reverse();
}

/** The modern versions among `supported`, newest first. */
export function modernVersionsOf(supported: readonly string[]): string[] {
  return supported.filter(isModernVersion).sort().reverse();
}

/**
 * The one table of which protocol versions have what the gateway relays: from `since`, and before
 * `until` where a later version removed it (the gateway never declares a feature to a version without it).
 */
export const VERSION_FEATURES = {
  /** Form elicitation: 2025-06-18 (the reference page says 2025-03-26, whose schema has no elicitation; the spec wins). */
  formElicitation: { since: '2025-06-18' },
  /** URL-mode elicitation, `elicitationId`, -32042, sampling with tools. */
  urlElicitation: { since: '2025-11-25' },
  samplingTools: { since: '2025-11-25' },
  /**
   * Resumable SSE streams (priming events, event ids, `Last-Event-ID`, a server ending a stream with
   * `retry`: "SSE polling", SEP-1699): exactly 2025-11-25. Earlier versions have no polling (a client
   * of theirs may choke on a priming event's empty data: the official SDK server primes only from
   * 2025-11-25 on), and 2026-07-28 removed `Last-Event-ID` resumption (there, closing a stream cancels).
   */
  streamPolling: { since: '2025-11-25', until: MODERN_PROTOCOL_VERSION },
} as const satisfies Record<string, { since: string; until?: string }>;

export type VersionFeature = keyof typeof VERSION_FEATURES;

export function supportsFeature(version: string, feature: VersionFeature): boolean {
  const facts: { since: string; until?: string } = VERSION_FEATURES[feature];
  return version >= facts.since && (facts.until === undefined || version < facts.until);
}

/** Whether a session's streams are resumable (VERSION_FEATURES.streamPolling). */
export function hasStreamPolling(version: string): boolean {
  return supportsFeature(version, 'streamPolling');
}
