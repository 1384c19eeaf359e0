/**
 * The floor the gateway is measured against: a passthrough HTTP proxy that does nothing but forward
 * (`tsx bench/serve-proxy.ts <target url>`; prints `ready <url>`). node:http on both sides, keep-alive
 * connections to the target, bodies piped through untouched: what one extra loopback hop costs on
 * this machine, without any MCP work. A `cpu` line on stdin is answered with `cpu <user µs> <system µs>`,
 * as bench/serve-gateway.ts does, so the floor rows show the proxy's own CPU per call.
 */
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';

const target = new URL(process.argv[2] ?? '');
const agent = new Agent({ keepAlive: true });
const server = createServer((req, res) => {
  const upstream = request(
    {
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: req.method,
      // The target's own Host: SDK servers on loopback refuse another (DNS rebinding protection).
      headers: { ...req.headers, host: target.host },
      agent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
});
server.listen(0, '127.0.0.1', () => {
  console.log(`ready http://127.0.0.1:${(server.address() as AddressInfo).port}${target.pathname}`);
});
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'cpu') return;
  const { user, system } = process.cpuUsage();
  console.log(`cpu ${user} ${system}`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
