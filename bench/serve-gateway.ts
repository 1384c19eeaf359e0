/**
 * One gateway process for benchmarks, as `npm start` runs it (the core on node:http):
 * `tsx bench/serve-gateway.ts <config.json> <dynamodb endpoint>`; prints `MCP gateway ready: <url>`.
 * A `cpu` line on stdin is answered with `cpu <user µs> <system µs>` (`process.cpuUsage()`), so the
 * benchmark can charge the CPU this process spent to the calls of one row; `gc` runs a full
 * collection when node runs with --expose-gc; `profile-start` and `profile-stop <file>` record a
 * V8 CPU profile of what happens in between.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { createInterface } from 'node:readline';
import { startLocalGateway } from '../dev/local-gateway';

const [configFile, dynamodbEndpoint] = process.argv.slice(2);
if (!configFile || !dynamodbEndpoint) throw new Error('usage: serve-gateway.ts <config.json> <dynamodb endpoint>');

const profiler = new Session();

void startLocalGateway({
  port: 0,
  demo: false,
  config: JSON.parse(readFileSync(configFile, 'utf8')),
  dynamodbEndpoint,
  startupReport: false,
}).then((gateway) => {
  console.log(`MCP gateway ready: ${gateway.url}`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line.trim() === 'gc') {
      // With --expose-gc (bench/instructions.ts): a full collection, so a measured phase pays for its garbage.
      (globalThis as { gc?: () => void }).gc?.();
      console.log('gc done');
    }
    const [command, file] = line.trim().split(' ');
    if (command === 'profile-start') {
      // The V8 CPU profiler for the measured calls only (bench/profile.ts): no start-up, no warm-up.
      profiler.connect();
      profiler.post('Profiler.enable', () => profiler.post('Profiler.start', () => console.log('profile started')));
    }
    if (command === 'profile-stop' && file) {
      profiler.post('Profiler.stop', (error, result) => {
        if (!error) writeFileSync(file, JSON.stringify(result.profile));
        profiler.disconnect();
        console.log(`profile written ${error ? 'failed' : file}`);
      });
    }
    if (line.trim() !== 'cpu') return;
    const { user, system } = process.cpuUsage();
    console.log(`cpu ${user} ${system}`);
  });
  process.on('SIGTERM', () => void gateway.close().then(() => process.exit(0)));
});
