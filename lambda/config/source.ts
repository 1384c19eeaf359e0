import type { AppConfigDataClientConfig } from '@aws-sdk/client-appconfigdata';
import { ENV } from './environment';
import { ConfigError, type GatewayConfig, parseConfig } from './schema';

/**
 * Where the Lambda's configuration comes from. The CDK stack sets exactly one of:
 * - `GATEWAY_CONFIG`: the configuration itself, as JSON (the default; it must fit Lambda's 4 KB
 *   environment together with the other variables);
 * - `GATEWAY_APPCONFIG`: `<application>/<environment>/<configuration profile>` (ids or names) of an AWS
 *   AppConfig hosted configuration: up to 1 MB, and changed with an AppConfig deployment instead of a
 *   stack deployment.
 * Either way the document is validated with the one schema (`schema.ts`). It is read once per cold
 * start and kept for the life of the execution environment: every request an environment serves sees
 * one configuration, and a new deployment reaches the environments Lambda starts after it.
 * `GATEWAY_TABLE_NAME`, when set, names the table whatever the document says: the stack owns the table,
 * so an edited AppConfig document cannot point the gateway at another one.
 */

export const CONFIG_ENV = ENV.config;
export const APPCONFIG_ENV = ENV.appConfig;
export const TABLE_NAME_ENV = ENV.tableName;

/** One AppConfig configuration profile, as deployed to one environment of one application. */
export interface AppConfigLocation {
  application: string;
  environment: string;
  profile: string;
}

/** Fetches the text of the configuration deployed at `location`; '' when nothing is deployed there. */
export type AppConfigReader = (location: AppConfigLocation) => Promise<string>;

export interface ConfigSourceOptions {
  /** @default appConfigDataReader() (the AWS SDK's AppConfigData client) */
  appConfigReader?: AppConfigReader;
}

/** AppConfig identifiers: ids (`[a-z0-9]{4,7}`) or names (1–64 characters, no slash). */
const IDENTIFIER = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/;

/** Parses `GATEWAY_APPCONFIG`; a malformed value fails naming the variable. */
export function parseAppConfigLocation(value: string): AppConfigLocation {
  const [application, environment, profile, ...rest] = value.split('/');
  const parts = [application, environment, profile];
  if (rest.length || !parts.every((part): part is string => part !== undefined && IDENTIFIER.test(part))) {
    throw new ConfigError(
      `${APPCONFIG_ENV} must be "<application>/<environment>/<configuration profile>" (AppConfig ids or names); got ${JSON.stringify(value)}`,
    );
  }
  return { application: application!, environment: environment!, profile: profile! };
}

/** Where the configuration is read from, for log lines and errors (never the document itself). */
export function describeConfigSource(env: NodeJS.ProcessEnv = process.env): string {
  if (env[APPCONFIG_ENV]) return `AppConfig ${env[APPCONFIG_ENV]}`;
  if (env[CONFIG_ENV]) return CONFIG_ENV;
  return 'defaults (no configuration given)';
}

/**
 * The validated gateway configuration, from `GATEWAY_CONFIG` or AppConfig (see above). Call it once per
 * cold start. Every problem is a ConfigError naming the source; the document's text is never echoed,
 * because it may hold inline credentials.
 */
export async function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  options: ConfigSourceOptions = {},
): Promise<GatewayConfig> {
  const inline = env[CONFIG_ENV];
  const appConfig = env[APPCONFIG_ENV];
  if (inline && appConfig) {
    throw new ConfigError(`set ${CONFIG_ENV} or ${APPCONFIG_ENV}, not both: the configuration would be ambiguous`);
  }
  const source = describeConfigSource(env);
  let text: string | undefined = inline;
  if (appConfig) {
    const location = parseAppConfigLocation(appConfig);
    const read = options.appConfigReader ?? appConfigDataReader();
    text = await read(location).catch((error: unknown) => {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new ConfigError(`could not read the configuration from ${source}: ${reason}`);
    });
    if (!text.trim()) {
      throw new ConfigError(`${source} has no deployed configuration (start an AppConfig deployment first)`);
    }
  }
  const raw = text === undefined ? {} : parseJson(text, source);
  const tableName = env[TABLE_NAME_ENV];
  const withTable =
    tableName && raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? { ...raw, tableName } : raw;
  return parseConfig(withTable, source === CONFIG_ENV ? CONFIG_ENV : `configuration from ${source}`);
}

function parseJson(text: string, source: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error, which may be a credential.
    throw new ConfigError(`the configuration from ${source} is not valid JSON`);
  }
}

/**
 * Reads through AppConfigData (StartConfigurationSession, then one GetLatestConfiguration), with short
 * timeouts: an unreachable endpoint (a VPC without a route to AppConfig) fails the cold start in
 * seconds rather than at the function timeout. The SDK is loaded only when AppConfig is configured.
 */
export function appConfigDataReader(clientConfig: AppConfigDataClientConfig = {}): AppConfigReader {
  return async (location) => {
    const { AppConfigDataClient, StartConfigurationSessionCommand, GetLatestConfigurationCommand } = await import(
      '@aws-sdk/client-appconfigdata'
    );
    const client = new AppConfigDataClient({
      maxAttempts: 3,
      requestHandler: { connectionTimeout: 3000, requestTimeout: 5000 },
      ...clientConfig,
    });
    try {
      const session = await client.send(
        new StartConfigurationSessionCommand({
          ApplicationIdentifier: location.application,
          EnvironmentIdentifier: location.environment,
          ConfigurationProfileIdentifier: location.profile,
        }),
      );
      const latest = await client.send(
        new GetLatestConfigurationCommand({ ConfigurationToken: session.InitialConfigurationToken }),
      );
      return latest.Configuration ? Buffer.from(latest.Configuration).toString('utf8') : '';
    } finally {
      client.destroy();
    }
  };
}
