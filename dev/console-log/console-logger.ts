import { LogFormatter, Logger, LogItem } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import {
  createLogger,
  type GatewayLogger,
  type GatewayLogLevel,
  withRequestKeys,
} from '../../lambda/observability/logger';
import { colourFor, type LogFormat } from './format';
import { type LogRecord, renderLogLine } from './render';

/**
 * The local server's logger. `json`: the Lambda's own (lambda/observability/logger.ts), line for line
 * what CloudWatch gets. `human`: the same Powertools Logger, its entries shaped by a LogFormatter
 * (Powertools' hook for the shape of an entry) and written as one readable line each.
 */
export function createConsoleLogger(level: GatewayLogLevel, format: LogFormat): GatewayLogger {
  if (format === 'json') return createLogger(level);
  return withRequestKeys(
    new HumanLogger({ serviceName: 'mcp-gateway', logLevel: level, logFormatter: new HumanLogFormatter() }),
  );
}

/** An entry as a person reads it: when, how serious, what happened, and the entry's own keys. */
export class HumanLogFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    return new LogItem({
      attributes: {
        level: attributes.logLevel,
        message: attributes.message,
        timestamp: this.formatTimestamp(attributes.timestamp),
      },
    }).addAttributes(additional);
  }
}

/**
 * Powertools writes every entry as `JSON.stringify` of its item; this one writes the line instead.
 * The item goes through the same serialisation first (Powertools' replacer: errors as name, message
 * and stack), so the line holds exactly what the JSON line would. Warnings and errors go to stderr,
 * the rest to stdout, as Powertools' console does.
 */
class HumanLogger extends Logger {
  protected override printLog(_logLevel: number, log: LogItem): void {
    log.prepareForPrint();
    const record = JSON.parse(JSON.stringify(log.getAttributes(), this.getJsonReplacer())) as LogRecord;
    const stream = /^(WARN|ERROR|CRITICAL)$/.test(String(record.level)) ? process.stderr : process.stdout;
    stream.write(`${renderLogLine(record, { colour: colourFor(stream) })}\n`);
  }

  // A child logger (Powertools' createChild) writes lines too.
  protected override createLogger(options?: ConstructorParameters<typeof Logger>[0]): Logger {
    return new HumanLogger(options);
  }
}
