#!/usr/bin/env node
/**
 * Bundle size and cold-start cost of the bundled Lambda handler, without AWS.
 *
 *   npx cdk synth -q && node scripts/measure-bundle.mjs            # the asset cdk.out holds
 *   node scripts/measure-bundle.mjs path/to/index.mjs [runs]        # any bundle
 *
 * Each run is a fresh `node` process (a cold start): it defines the `awslambda` global the runtime
 * provides, imports the bundle (import time), then sends one GET /mcp through the handler (first
 * invocation: the gateway is built from GATEWAY_CONFIG, no network or DynamoDB call is made; GET is
 * answered 405). Prints medians. Local numbers on a dev machine, not Lambda's.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

const CHILD = `
const { pathToFileURL } = require('node:url');
const { Writable } = require('node:stream');
globalThis.awslambda = {
  streamifyResponse: (h) => h,
  HttpResponseStream: { from: (s, prelude) => { s.prelude = prelude; return s; } },
};
(async () => {
  const t0 = performance.now();
  const mod = await import(pathToFileURL(process.argv[1]).href);
  const t1 = performance.now();
  const stream = new Writable({ write(_c, _e, cb) { cb(); } });
  const event = {
    version: '2.0', routeKey: '$default', rawPath: '/mcp', rawQueryString: '', headers: { host: 'x.lambda-url.eu-west-1.on.aws' },
    requestContext: { http: { method: 'GET', path: '/mcp', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'measure' },
      domainName: 'x.lambda-url.eu-west-1.on.aws', requestId: 'r', routeKey: '$default', stage: '$default', time: '', timeEpoch: 0, accountId: 'anonymous', apiId: 'x' },
    isBase64Encoded: false,
  };
  const done = new Promise((resolve) => stream.on('finish', resolve));
  await mod.handler(event, stream, { getRemainingTimeInMillis: () => 900000 });
  await done;
  const t2 = performance.now();
  process.stdout.write(JSON.stringify({ importMs: t1 - t0, firstInvokeMs: t2 - t1, status: stream.prelude && stream.prelude.statusCode }));
})().catch((e) => { console.error(e); process.exit(1); });
`;

function findAsset() {
  const out = 'cdk.out';
  if (!existsSync(out)) throw new Error('no cdk.out: run `npx cdk synth -q` first or pass a bundle path');
  const candidates = readdirSync(out)
    .filter((name) => name.startsWith('asset.') && existsSync(join(out, name, 'index.mjs')))
    .map((name) => join(out, name, 'index.mjs'))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (!candidates.length) throw new Error('no bundled handler (asset.*/index.mjs) in cdk.out');
  return candidates[0];
}

const file = process.argv[2] ?? findAsset();
const runs = Number(process.argv[3] ?? 15);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

const env = {
  ...process.env,
  GATEWAY_CONFIG: JSON.stringify({ tableName: 'measure', targets: [] }),
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'x',
  AWS_SECRET_ACCESS_KEY: 'x',
  GATEWAY_LOG_LEVEL: 'SILENT',
};
const results = [];
for (let i = 0; i < runs; i++) {
  const output = execFileSync(process.execPath, ['-e', CHILD, file], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  results.push(JSON.parse(output));
}
const bytes = statSync(file).size;
// The chunks beside index.mjs (the bundle is split): loaded by the import or only when configured.
const code = readdirSync(dirname(file)).filter((name) => name.endsWith('.mjs'));
const map = existsSync(`${file}.map`) ? statSync(`${file}.map`).size : 0;
console.log(
  JSON.stringify(
    {
      file,
      node: process.version,
      runs,
      bundleBytes: bytes,
      chunks: code.length - 1,
      codeBytesWithChunks: code.reduce((sum, name) => sum + statSync(join(dirname(file), name)).size, 0),
      gzipBytes: gzipSync(readFileSync(file)).length,
      sourceMapBytes: map,
      importMsMedian: Math.round(median(results.map((r) => r.importMs))),
      importMsMin: Math.round(Math.min(...results.map((r) => r.importMs))),
      firstInvokeMsMedian: Math.round(median(results.map((r) => r.firstInvokeMs))),
      firstStatus: results[0].status,
    },
    null,
    2,
  ),
);
