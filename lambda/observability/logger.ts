import { Logger } from '@aws-lambda-powertools/logger';

/**
 * Structured JSON logs (Powertools Logger). Callers pass correlation keys (sessionId, target, method,
 * requestId) per line rather than mutating shared state, because one local process serves many
 * requests at once. Header values and bodies are never logged: they may carry tokens.
 */
export type GatewayLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export type GatewayLogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';

export function createLogger(level: GatewayLogLevel = 'INFO'): GatewayLogger {
  // GATEWAY_LOG_LEVEL lets tests and operators override the configured level without a redeploy.
  const override = process.env.GATEWAY_LOG_LEVEL as GatewayLogLevel | undefined;
  return new Logger({ serviceName: 'mcp-gateway', logLevel: override ?? level });
}

/** Error details safe to log: name and message, never request data. */
export function describeError(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Unknown', message: String(error) };
}
