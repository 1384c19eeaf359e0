import { Logger } from '@aws-lambda-powertools/logger';
import type { LogAttributes } from '@aws-lambda-powertools/logger/types';
import { currentRequest } from './request-context';

/**
 * Structured JSON logs (Powertools Logger). Callers pass correlation keys (sessionId, target, method,
 * requestId) per line rather than mutating shared state, because one local process serves many
 * requests at once. Header values and bodies are never logged: they may carry tokens.
 */
export type GatewayLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export type GatewayLogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';

/** `level`: the configured one, or GATEWAY_LOG_LEVEL's, which callers read validated (config/environment.ts). */
export function createLogger(level: GatewayLogLevel = 'INFO'): GatewayLogger {
  return withRequestKeys(new Logger({ serviceName: 'mcp-gateway', logLevel: level }));
}

type LogMethod = 'debug' | 'info' | 'warn' | 'error';
type LogInput = Parameters<Logger['info']>[0];
type LogExtra = Parameters<Logger['info']> extends [unknown, ...infer Rest] ? Rest : never;

/**
 * Every line written while a request is served carries its `requestId` and W3C `traceId`
 * (request-context.ts), without callers passing them and without shared mutable logger state.
 */
export function withRequestKeys(base: GatewayLogger): GatewayLogger {
  const method =
    (name: LogMethod) =>
    (input: LogInput, ...extra: LogExtra): void => {
      const request = currentRequest();
      if (!request) {
        base[name](input, ...extra);
        return;
      }
      const keys = { requestId: request.requestId, traceId: request.trace.traceId };
      // Powertools takes either one Error/string or attribute objects; a lone Error keeps its formatting as `error`.
      const [first] = extra;
      const attributes =
        first instanceof Error ? [{ error: first }] : typeof first === 'string' ? [{ extra: first }] : extra;
      base[name](input, ...(attributes as LogAttributes[]), keys);
    };
  return { debug: method('debug'), info: method('info'), warn: method('warn'), error: method('error') };
}

/** Error details safe to log: name and message, never request data. */
export function describeError(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Unknown', message: String(error) };
}
