import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { createLogger } from '../../lambda/observability/logger';
import { modernCall, withModernGateway } from '../modern/helpers';
import { aheadClock } from '../support/fake-clock';

/**
 * confirmTools on 2026-07-28: the modern path stores nothing, so one
 * confirmation is not single-use; it is bound to the principal, the tool and its arguments and valid
 * for a short window only (confirmationTtlSeconds, default 120 s). Here 5 s: a replay within it is
 * forwarded (documented), one after it is refused before the target is called. The gateway's
 * clock is injected: the test moves it past the window instead of waiting.
 */
const WINDOW_S = 5;
let skewMs = 0;
const gw = withModernGateway(
  (targets) => ({
    targets: [{ name: 'modern', url: targets.modern.url }],
    confirmTools: ['modern___echo'],
    confirmationTtlSeconds: WINDOW_S,
  }),
  {
    targets: { modern: () => startModernDemoTarget() },
    localServer: { logger: createLogger('SILENT'), clock: aheadClock(() => skewMs) },
  },
);
const ECHO = { name: 'modern___echo', arguments: { text: 'once' } };
const ACCEPT = { gateway_confirm: { action: 'accept', content: { confirm: true } } };

test('a confirmation is valid for confirmationTtlSeconds, for the same arguments only, then refused', async () => {
  const calls = () => gw.targets.modern.stats().calls.length;
  const asked = await modernCall(gw.url, 'tools/call', ECHO, 'ask');
  const requestState = asked.body.result.requestState;
  const before = calls();
  const confirmed = await modernCall(gw.url, 'tools/call', { ...ECHO, inputResponses: ACCEPT, requestState }, 'go');
  expect(confirmed.body.result.content[0].text).toBe('echo: once');
  const otherArguments = await modernCall(
    gw.url,
    'tools/call',
    { name: 'modern___echo', arguments: { text: 'twice' }, inputResponses: ACCEPT, requestState },
    'other',
  );
  expect(otherArguments.status).toBe(400);
  expect(otherArguments.body.error).toMatchObject({ code: -32602, data: { reason: 'invalid' } });
  expect(calls()).toBe(before + 1);
  skewMs = WINDOW_S * 1000 + 1000; // past the window (expiry is kept in whole seconds)
  const replay = await modernCall(gw.url, 'tools/call', { ...ECHO, inputResponses: ACCEPT, requestState }, 'late');
  expect(replay.status).toBe(400);
  expect(replay.body.error).toMatchObject({ code: -32602, data: { reason: 'expired' } });
  expect(calls()).toBe(before + 1);
});
