import { readFileSync } from 'node:fs';
import { ConfigError, type GatewayConfigInput, withoutSchemaKey } from '../lambda/config/schema';
import { type ConfigProblem, checkConfigText, countProblems, formatProblems } from '../lib/config/check';
import { type FlagName, type FlagValues, helpText, type ParsedFlags, parseFlags, UsageError } from './cli-flags';
import { defaultLogFormat } from './console-log/format';
import { environmentLogRelay } from './console-log/relay';
import { type DemoTargetsOptions, isAddressInUse } from './demo-targets';
import { runLambdaMode } from './lambda-mode/cli';
import { startLocalGateway } from './local-gateway';
import { readyLines } from './ready-lines';
import { runWebFunctionMode } from './web-function-mode/cli';

// The local server runs on the developer's Node 20; the Lambda runs Node 22+, where the AWS SDK's
// notice about future Node 22 requirements does not apply. Silenced here only (set it to 'false' to see it).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** Exit statuses (also in --help). */
const START_FAILED = 1;
const BAD_COMMAND_LINE = 2;

async function main(flags: ParsedFlags): Promise<void> {
  const { values, given } = flags;
  if (values.help) {
    console.log(helpText());
    return;
  }
  if (values['check-config'] !== undefined) {
    checkConfigFile(values['check-config']);
    return;
  }
  const logFormat = values['log-format'] ?? defaultLogFormat();
  const logLevel = values['log-level'];
  // What every form takes from the flags alike.
  const common = {
    config: values.config === undefined ? undefined : readConfig(values.config),
    dynamodbEndpoint: values['dynamodb-endpoint'],
    dynamodbPort: values['dynamodb-port'],
    demo: !values['no-demo'],
    demoTargets: demoTargetsOf(values, given),
  };
  const emulated = {
    host: values.host ?? '127.0.0.1',
    port: values.port ?? 8080,
    ...common,
    // The environments write what CloudWatch would get; shown here in the chosen format.
    log: environmentLogRelay(logFormat),
    environment: logLevel ? { GATEWAY_LOG_LEVEL: logLevel } : undefined,
  };
  // The Web Function bundle in the local Web Function emulator (tools/web-function-emulator/).
  if (values['web-function']) return runWebFunctionMode(emulated);
  // The deployment bundle in local Lambda execution environments (tools/lambda-emulator/).
  if (values.lambda) return runLambdaMode(emulated);
  const gateway = await startLocalGateway({ host: values.host, port: values.port, ...common, logLevel, logFormat });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: shutting down`);
    // Bounded: a stuck stream must not keep the process alive.
    setTimeout(() => process.exit(0), 5000).unref();
    void gateway.close().then(() => process.exit(0));
  };
  // Before the lines that say Ctrl-C stops it: a Ctrl-C right after them must not kill the process.
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  for (const line of readyLines(gateway)) console.log(line);
}

/** Where the demo targets run: started here (a default port in use falls back to a free one), or at a URL. */
function demoTargetsOf(values: FlagValues, given: ReadonlySet<FlagName>): DemoTargetsOptions {
  return {
    demo: { url: values['demo-url'], port: values['demo-port'], fallbackToFreePort: !given.has('demo-port') },
    demoModern: {
      url: values['demo-modern-url'],
      port: values['demo-modern-port'],
      fallbackToFreePort: !given.has('demo-modern-port'),
    },
  };
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(`${file}: cannot read it: ${(error as Error).message}`);
  }
}

/**
 * `--check-config FILE`: every problem, warning and note of the file. Valid (exit 0) when the gateway
 * accepts it, warnings and notes then on stdout after `FILE: valid`; else a ConfigError (exit 1).
 */
function checkConfigFile(file: string): void {
  const checked = checkConfigText(readText(file), { purpose: 'check' });
  if (!checked.ok) throw new ConfigError(invalid(file, checked.problems));
  if (checked.problems.length === 0) console.log(`${file}: valid`);
  else console.log(`${file}: valid, ${countProblems(checked.problems)}:\n${formatProblems(file, checked.problems)}`);
}

/**
 * The file's configuration, or a ConfigError listing every problem in it (one `file:line:column` line
 * each), an environment variable it names that the gateway would stop on here among them. Warnings
 * (a variable only a user's sign-in needs) are printed; notes are for --check-config.
 */
function readConfig(file: string): GatewayConfigInput {
  const text = readText(file);
  const checked = checkConfigText(text, { purpose: 'start' });
  if (!checked.ok) throw new ConfigError(invalid(file, checked.problems));
  const warnings = checked.problems.filter((problem) => problem.severity === 'warning');
  if (warnings.length > 0) console.error(formatProblems(file, warnings));
  return withoutSchemaKey(JSON.parse(text.replace(/^\uFEFF/, ''))) as GatewayConfigInput;
}

/** The file is invalid, or (only unset variables) valid but not startable in this shell. */
function invalid(file: string, problems: readonly ConfigProblem[]): string {
  const errors = problems.filter((problem) => problem.severity === 'error');
  const what = errors.every((problem) => problem.variable) ? 'cannot start in this shell' : 'invalid configuration';
  return `${what}, ${countProblems(problems)}:\n${formatProblems(file, problems)}`;
}

/** A busy port, named by the flag that chose it. */
function portInUse(error: NodeJS.ErrnoException & { port?: number }, values: FlagValues): string {
  const ports: Array<[FlagName, number | undefined]> = [
    ['port', values.port],
    ['dynamodb-port', values['dynamodb-port']],
    ['demo-port', values['demo-port']],
    ['demo-modern-port', values['demo-modern-port']],
  ];
  const flag = ports.find(([, port]) => port === error.port)?.[0];
  const where = flag ? `--${flag} ${error.port}` : `port ${error.port}`;
  return `${where}: in use by another process; choose another port${flag ? ` with --${flag} N` : ''} (0 picks a free one)`;
}

function run(): void {
  let flags: ParsedFlags;
  try {
    flags = parseFlags(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${error.message}; npm start -- --help lists the flags`);
    process.exit(BAD_COMMAND_LINE);
  }
  main(flags).catch((error: unknown) => {
    const message =
      error instanceof ConfigError
        ? error.message
        : isAddressInUse(error)
          ? portInUse(error, flags.values)
          : `failed to start: ${(error as Error).message}`;
    console.error(message);
    process.exit(START_FAILED);
  });
}

run();
