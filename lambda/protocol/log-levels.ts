/** RFC 5424 severities, as MCP's `logging/setLevel` and `_meta` logLevel name them. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/** Whether a `notifications/message` is at `level` or more severe (nothing passes without a level). */
export function atOrAbove(notification: { params?: unknown }, level: string | undefined): boolean {
  if (!isLogLevel(level)) return false;
  const got = (notification.params as { level?: unknown } | undefined)?.level;
  return isLogLevel(got) && LOG_LEVELS.indexOf(got) >= LOG_LEVELS.indexOf(level);
}
