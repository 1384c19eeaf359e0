import { KEEP_ALIVE_TIMEOUT_MS, serveOnNode } from '../../lambda/adapters/node-http';
import { systemClock } from '../../lambda/scheduling/clock';
import { startWebFunctionEmulator } from '../../tools/web-function-emulator/emulator';

/**
 * Kept-alive connections: the gateway's server (the local server, a Web Function's environment) and
 * the emulator's front keep an idle connection longer than any client or front in their way (a load
 * balancer's 60 s), and say so (`Keep-Alive: timeout=…`, which clients such as undici read): the
 * client side lets go first. With Node's 5 s default, a busy client reused a connection the server
 * was closing, and its request failed with "other side closed" before reaching it.
 */

it('the gateway’s node server keeps an idle connection for 75 s and tells its clients', async () => {
  const server = await serveOnNode(async () => new Response('ok'), {
    host: '127.0.0.1',
    port: 0,
    clock: systemClock,
  });
  try {
    const res = await fetch(`${server.url}/anything`);
    await res.text();
    expect(KEEP_ALIVE_TIMEOUT_MS).toBeGreaterThan(60_000);
    expect(res.headers.get('keep-alive')).toBe(`timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}`);
  } finally {
    await server.close();
  }
});

it('the Web Function emulator’s front keeps an idle client connection as long', async () => {
  const emulator = await startWebFunctionEmulator({
    entry: `${__dirname}/../web-function-emulator/fixtures/server.mjs`,
    log: () => undefined,
  });
  try {
    const res = await fetch(`${emulator.url}/echo`);
    await res.text();
    expect(res.headers.get('keep-alive')).toBe(`timeout=${KEEP_ALIVE_TIMEOUT_MS / 1000}`);
  } finally {
    await emulator.close();
  }
});
