import type { Browser } from 'playwright-core';
import {
  type DynamoProcess,
  type GatewayProcess,
  startDynamoProcess,
  startGatewayProcess,
} from '../support/gateway-process';
import { freePort } from '../support/loopback';
import type { Json } from '../support/mcp-http';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { answerOf, caller, connectedTargets } from '../support/oauth/consent-calls';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { authorizationServerStats } from '../support/oauth/test-endpoints';
import { chromium, describeNeeding } from '../support/prerequisites';

/**
 * One refresh of a user's connection at a time across every instance, with real parts: oidc-provider
 * rotating refresh tokens (a refresh token works once; using it again is refused and taken as theft:
 * the whole grant is revoked), an official-SDK MCP target that verifies the user's JWT, two gateway
 * processes on one DynamoDB (dynalite) in each form the gateway runs in (`npm start`, the deployment
 * bundle in the Lambda emulator, the Web Function bundle in its emulator), and the user's consent in
 * Chromium. The access token expires,
 * then both instances are called at once, round after round: one of them refreshes, the other uses what
 * it stored; the user is never asked again and the authorization server sees one refresh per round.
 */

jest.setTimeout(180_000);

const withBrowser = describeNeeding(chromium);

/** The access tokens' lifetime (s): long enough for a round's calls, short enough to wait out. */
const TTL_SECONDS = 2;
const ROUNDS = 5;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** A whoami answer as a failure shows it: the user it answered as, or the error (-32042: consent asked). */
function shownAs(answer: Json): string {
  return answer.error ? `error ${answer.error.code}` : String(answer.result.content[0].text);
}

withBrowser('a connection refreshed by two instances at once', () => {
  let dynamo: DynamoProcess;
  let browser: Browser;

  beforeAll(async () => {
    dynamo = await startDynamoProcess();
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await dynamo?.close();
  });

  describe.each([
    // A target (and client) of its own per form: the connection another form stored (same principal, one table) is not this one.
    // `says`: what the form's ready lines name (the process runs the form asked for).
    { kind: 'two `npm start` processes', name: 'mine', form: {}, says: 'MCP gateway ready' },
    { kind: 'two `npm start -- --lambda` processes', name: 'mine-lambda', form: { lambda: true }, says: 'Lambda mode' },
    {
      kind: 'two `npm start -- --web-function` processes',
      name: 'mine-web-function',
      form: { webFunction: true },
      says: 'Web Function mode',
    },
  ])('$kind on one table, the authorization server rotating refresh tokens', ({ name, form, says }) => {
    let as: AuthorizationServer;
    let target: ProtectedTarget;
    const instances: GatewayProcess[] = [];
    const tool = `${name}___whoami`;

    beforeAll(async () => {
      const port = await freePort();
      const clientId = `gateway-${name}`;
      as = await startAuthorizationServer({
        clientId,
        redirectUris: [`http://127.0.0.1:${port}/connect/callback/${name}`],
        accessTokenTtlSeconds: TTL_SECONDS,
        env: { ROTATE_REFRESH_TOKENS: '1' },
      });
      target = await startProtectedTarget(as.issuer);
      const config = {
        targets: [
          {
            name,
            url: target.url,
            userOAuth: {
              clientId,
              clientSecret: { fromEnv: 'REFRESH_TEST_CLIENT_SECRET' },
              authorizationServer: as.issuer,
            },
          },
        ],
        // One public URL for both: the grant's callback is the first instance's, where the user consents.
        connections: { publicUrl: `http://127.0.0.1:${port}` },
        logLevel: 'SILENT' as const,
        requestStateKeys: { current: 'refresh-across-instances-key-of-one-gateway-0123' },
      };
      const env = { REFRESH_TEST_CLIENT_SECRET: as.clientSecret };
      instances.push(await startGatewayProcess(config, dynamo.endpoint, { ...form, env, port }));
      instances.push(await startGatewayProcess(config, dynamo.endpoint, { ...form, env }));
      for (const instance of instances) expect(instance.output()).toContain(says);
    });
    afterAll(async () => {
      for (const instance of instances) await instance.stop();
      await target?.close();
      await as?.close();
    });

    it(`every round (${ROUNDS}) both calls answer as the user, after one refresh, and the connection stays`, async () => {
      const [first, second] = instances as [GatewayProcess, GatewayProcess];
      const origin = new URL(first.url).origin;
      const callFirst = await caller(first.url);
      const callSecond = await caller(second.url);

      const asked = await callFirst(tool);
      expect(asked.error?.code).toBe(-32042);
      const [elicitation] = asked.error.data.elicitations as Array<{ url: string }>;
      await consentAs(browser, elicitation!.url, 'alice', `${origin}/connect/callback`);
      expect(answerOf(await callFirst(tool))).toBe('alice');
      // The second instance finds the target's authorization server too (its discovery asks the target without a token).
      expect(answerOf(await callSecond(tool))).toBe('alice');
      let lastIssued = Date.now();

      for (let round = 1; round <= ROUNDS; round++) {
        // Every token issued so far has expired once this has passed (its exp ≤ issue + TTL, in whole seconds).
        // A duration: the expiry on the real clock (running servers and gateways) is the scenario. When the
        // gateways refresh is their processes' own decision, which nothing outside them shows before a call.
        await sleep(lastIssued + (TTL_SECONDS + 1) * 1000 - Date.now());
        const before = await authorizationServerStats(as.issuer);
        const seen = target.stats().tokenIds;

        const answers = await Promise.all([callFirst(tool), callSecond(tool)]);
        lastIssued = Date.now();

        expect({ round, answers: answers.map(shownAs) }).toEqual({ round, answers: ['alice', 'alice'] });
        const after = await authorizationServerStats(as.issuer);
        // One refresh: the other instance used what the first stored, and never spent a refresh token twice.
        expect({ round, refreshes: after.refreshes - before.refreshes }).toEqual({ round, refreshes: 1 });
        expect({
          round,
          refused: after.refreshesRefused - before.refreshesRefused,
          revoked: after.revokedGrants - before.revokedGrants,
        }).toEqual({
          round,
          refused: 0,
          revoked: 0,
        });
        // Both calls carried the one token of this round's refresh (the waiting instance used what the other stored).
        const sent = new Set(target.stats().tokenIds.slice(seen.length));
        expect({ round, tokens: sent.size, new: [...sent].every((id) => !seen.includes(id)) }).toEqual({
          round,
          tokens: 1,
          new: true,
        });
        expect(await connectedTargets(origin)).toEqual([name]);
      }
      expect(new Set(target.stats().subjects)).toEqual(new Set(['alice']));
    });
  });
});
