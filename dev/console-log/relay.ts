import { colourFor, type LogFormat } from './format';
import { type LogRecord, renderLogLine } from './render';

/**
 * Where the output of the local Lambda's (or Web Function's) environments goes: what CloudWatch Logs
 * would get from a deployment. `json` passes every line on as it is. `human` writes the gateway's JSON
 * entries as readable lines under the environment's name, leaves out the metric lines (CloudWatch's
 * Embedded Metric Format, `{"_aws":…}`: for CloudWatch, not a person), and passes anything else on.
 */
export function environmentLogRelay(
  format: LogFormat,
  write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
  colour: boolean = colourFor(process.stderr),
): (line: string) => void {
  if (format === 'json') return write;
  return (line) => {
    const match = /^(\[env \d+\]) (\{.*\})\s*$/.exec(line);
    const record = match ? parseObject(match[2] ?? '') : undefined;
    if (!match || !record) return write(line);
    if ('_aws' in record) return;
    if (typeof record.level !== 'string' || typeof record.message !== 'string') return write(line);
    write(renderLogLine(record, { colour, source: match[1] }));
  };
}

function parseObject(text: string): LogRecord | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as LogRecord) : undefined;
  } catch {
    return undefined;
  }
}
