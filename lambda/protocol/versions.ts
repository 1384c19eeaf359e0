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

/** When the specification introduced what the gateway relays (it never declares a feature to an older version). */
export const FEATURE_SINCE = {
  /** Form elicitation: 2025-06-18 (the reference page says 2025-03-26, whose schema has no elicitation; the spec wins). */
  formElicitation: '2025-06-18',
  /** URL-mode elicitation, `elicitationId`, -32042, sampling with tools. */
  urlElicitation: '2025-11-25',
  samplingTools: '2025-11-25',
} as const;

export function supportsFeature(version: string, feature: keyof typeof FEATURE_SINCE): boolean {
  return version >= FEATURE_SINCE[feature];
}

/**
 * Resumable SSE streams (priming events, event ids, `Last-Event-ID`, a server ending a stream with
 * `retry`: "SSE polling", SEP-1699): exactly 2025-11-25. Earlier versions have no polling (a client of
 * theirs may choke on a priming event's empty data: the official SDK server primes only from 2025-11-25
 * on), and 2026-07-28 removed `Last-Event-ID` resumption (there, closing a stream cancels).
 */
export const STREAM_POLLING_VERSION = '2025-11-25';

export function hasStreamPolling(version: string): boolean {
  return version === STREAM_POLLING_VERSION;
}
