/**
 * The floor of the two Lambda forms: a function that only forwards, run by the same emulator as the
 * gateway it is the floor of, so the row and its floor cross the same front end and environments.
 * node:http with keep-alive to FORWARD_TO (a target's MCP URL), bodies untouched, no MCP work.
 * - function URL (`npm start -- --lambda`'s emulator, `function: { file, handler: 'handler' }`): the
 *   payload 2.0 event's request sent on, the response streamed back (response streaming);
 * - Web Function (tools/web-function-emulator/, `entry`): a node:http server on
 *   AWS_LAMBDA_HTTP_ENDPOINT, as the gateway's own server listens there.
 * Plain ESM, no TypeScript: both runtimes run it with the runtime image's `node`, without tsx.
 */
import { Agent, createServer, request } from 'node:http';
import { pipeline } from 'node:stream/promises';

const target = new URL(process.env.FORWARD_TO ?? 'http://127.0.0.1/');
const agent = new Agent({ keepAlive: true });
/** Headers of one connection, or of the function URL's own: not forwarded. */
const DROPPED = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host', 'x-amzn-trace-id']);

function upstreamRequest(method, headers, onResponse) {
  return request(
    {
      host: target.hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method,
      // The target's own Host: SDK servers on loopback refuse another (DNS rebinding protection).
      headers: { ...headers, host: target.host },
      agent,
    },
    onResponse,
  );
}

function kept(headers) {
  const out = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || DROPPED.has(name) || name.startsWith('x-forwarded-')) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Function URL: the event's request forwarded, its response streamed back as it arrives. */
export const handler = globalThis.awslambda?.streamifyResponse(async (event, responseStream) => {
  const body = Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');
  const answer = await new Promise((resolve, reject) => {
    const upstream = upstreamRequest(
      event.requestContext.http.method,
      { ...kept(event.headers ?? {}), 'content-length': String(body.length) },
      resolve,
    );
    upstream.on('error', reject);
    upstream.end(body);
  });
  const out = globalThis.awslambda.HttpResponseStream.from(responseStream, {
    statusCode: answer.statusCode ?? 502,
    headers: kept(answer.headers),
  });
  await pipeline(answer, out);
});

/** Web Function: the application's own server on the endpoint the platform names. */
const endpoint = process.env.AWS_LAMBDA_HTTP_ENDPOINT;
if (endpoint) {
  const at = endpoint.lastIndexOf(':');
  const server = createServer((req, res) => {
    const upstream = upstreamRequest(req.method, req.headers, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    // A client that leaves (a held GET stream at the end of a row) ends the target's request too.
    res.on('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });
  server.listen(Number(endpoint.slice(at + 1)), endpoint.slice(0, at));
  process.on('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
