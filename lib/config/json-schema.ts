import * as z from 'zod';
import { GatewayConfigSchema } from '../../lambda/config/schema';

/** Where the committed JSON Schema of the configuration file lives (`npm run config-schema` writes it). */
export const CONFIG_JSON_SCHEMA_PATH = 'schema/gateway-config.schema.json';

/** A JSON Schema object, as far as this project reads one. */
export interface JsonSchema {
  $schema?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema | JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  [keyword: string]: unknown;
}

/**
 * The JSON Schema of the gateway configuration, generated from the one zod schema (`lambda/config/schema.ts`), for
 * editors (`"$schema"` in a file), `--check-config` and AppConfig's validator (`draft-04`). A top-level
 * `$schema` string is allowed, as `parseConfig` ignores it. Cross-field rules (duplicate target names,
 * …) cannot be expressed here; the zod schema still checks them.
 */
export function gatewayConfigJsonSchema(target: 'draft-04' | 'draft-7' = 'draft-7'): JsonSchema {
  const generated = z.toJSONSchema(GatewayConfigSchema, { target, io: 'input' }) as JsonSchema;
  return {
    ...generated,
    title: 'MCP gateway configuration',
    description:
      'The configuration of the MCP gateway: `npm start -- --config FILE`, GATEWAY_CONFIG on Lambda, an AppConfig document. Generated from lambda/config/schema.ts.',
    properties: {
      $schema: { type: 'string', description: 'The JSON Schema of this file (ignored by the gateway).' },
      ...generated.properties,
    },
  };
}
