/**
 * The floor the gateway is measured against: a passthrough HTTP proxy that does nothing but forward
 * (`tsx bench/serve-proxy.ts <target url>`; prints `ready <url>`). node:http on both sides, keep-alive
 * connections to the target, bodies piped through untouched: what one extra loopback hop costs on
 * this machine, without any MCP work.
 */
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

const target = new URL(process.argv[2] ?? '');
const agent = new Agent({ keepAlive: true });
const server = createServer((req, res) => {
  const upstream = request(
    {
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: req.method,
      headers: req.headers,
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
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
