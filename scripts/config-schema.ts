/**
 * Writes the configuration file's JSON Schema (schema/gateway-config.schema.json) from the one zod
 * schema, formatted as the repository formats JSON (biome). test/config/examples.test.ts fails in
 * CI when the committed file no longer matches the zod schema.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_JSON_SCHEMA_PATH, gatewayConfigJsonSchema } from '../lib/config/json-schema';

const root = join(__dirname, '..');
writeFileSync(join(root, CONFIG_JSON_SCHEMA_PATH), `${JSON.stringify(gatewayConfigJsonSchema(), null, 2)}\n`);
execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', CONFIG_JSON_SCHEMA_PATH], {
  cwd: root,
  stdio: 'ignore',
});
console.log(`wrote ${CONFIG_JSON_SCHEMA_PATH}`);
