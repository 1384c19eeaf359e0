import type { GatewayKind, GatewayUnderTest } from '../support/gateways';
import { type OpenedListen, openListen } from '../support/listen-client';
import { startV2ResourcesServer, type V2ResourcesServer } from '../support/servers/v2-resources-server';
import { withModernGateway } from './helpers';

/**
 * What one `subscriptions/listen` (2026-07-28) may cost: at most `maxResourceSubscriptionsPerListen`
 * resource URIs and `maxTaskIdsPerListen` task ids (100 each by default), and URIs of at most 8000
 * characters, or it is refused with -32602 before any target is asked; and N URIs cost one listing
 * of each target, not one per URI (concurrent cache misses share one live listing). The targets are
 * official v2 SDK servers with many resources, counting what they receive. The refusals hold in each
 * form the gateway runs in: the local server, the deployment bundle in the Lambda emulator, the Web
 * Function bundle in its emulator.
 */

// Long enough for a deployment form's first start (its bundle checked, its first environment started).
jest.setTimeout(60_000);

const FORMS: GatewayKind[] = ['local server', 'lambda runtime', 'web function'];

const ALPHA = 60;
const BETA = 40;

/** A gateway of its own (a cold routing cache) in front of two targets: alpha with 60 resources, beta with 40. */
function gatewayFixture(kind: GatewayKind = 'local server') {
  return withModernGateway(
    (t) => ({
      targets: [
        { name: 'alpha', url: t.alpha.url, era: 'modern' },
        { name: 'beta', url: t.beta.url, era: 'modern' },
      ],
      logLevel: 'SILENT',
    }),
    {
      kind,
      targets: {
        alpha: () => startV2ResourcesServer({ scheme: 'alpha', count: ALPHA }),
        beta: () => startV2ResourcesServer({ scheme: 'beta', count: BETA }),
      },
    },
  );
}

/** Every request a target received, by method. */
function received(target: V2ResourcesServer): Record<string, number> {
  return target.stats().modern.requestsByMethod;
}

const total = (target: V2ResourcesServer) => Object.values(received(target)).reduce((sum, n) => sum + n, 0);

/** 100 URIs (the default cap): 59 of alpha's resources, 40 of beta's, one that no target offers. */
function capUris(alpha: V2ResourcesServer, beta: V2ResourcesServer): { uris: string[]; served: string[] } {
  const served = [
    ...Array.from({ length: 59 }, (_, i) => alpha.uri(i)),
    ...Array.from({ length: BETA }, (_, i) => beta.uri(i)),
  ];
  return { uris: [...served, 'nowhere://x'], served };
}

/**
 * What a deployment form's emulator would hide behind a fresh environment (an environment lost to a
 * request): the Lambda runtime's failed invocations (a handler error or a crashed runtime); the Web
 * Function's environments started and killed (one environment serves every request of these tests).
 */
function environmentTrouble(gateway: GatewayUnderTest): Record<string, number> {
  if (gateway.stats) return { failedInvocations: gateway.stats().errors };
  if (gateway.webFunction) {
    const { environmentsStarted, kills } = gateway.webFunction.stats();
    return { environmentsStarted, kills };
  }
  return {};
}

describe.each(FORMS)('through the %s, a listen over the caps is refused before any target is asked', (kind) => {
  const gw = gatewayFixture(kind);

  async function refused(notifications: Record<string, unknown>): Promise<OpenedListen> {
    const before = [total(gw.targets.alpha), total(gw.targets.beta)];
    const opened = await openListen(gw.url, 'over', notifications, AbortSignal.timeout(10_000));
    opened.close();
    expect([total(gw.targets.alpha), total(gw.targets.beta)]).toEqual(before);
    expect(opened.contentType).toContain('application/json');
    return opened;
  }

  it('101 resource URIs: -32602 naming the field and the limit; nothing reaches a target', async () => {
    const uris = Array.from({ length: 101 }, (_, i) => gw.targets.alpha.uri(i));
    const { first } = await refused({ resourceSubscriptions: uris });
    expect(first?.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(
        /notifications\.resourceSubscriptions: at most 100 resource URIs per listen \(maxResourceSubscriptionsPerListen\)/,
      ),
      data: { field: 'notifications.resourceSubscriptions', limit: 100 },
    });
  });

  it('101 task ids: -32602 naming the field and the limit; nothing reaches a target', async () => {
    const { first } = await refused({ taskIds: Array.from({ length: 101 }, (_, i) => `task-${i}`) });
    expect(first?.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/notifications\.taskIds: at most 100 task ids per listen \(maxTaskIdsPerListen\)/),
      data: { field: 'notifications.taskIds', limit: 100 },
    });
  });

  it('a resource URI over 8000 characters: -32602 naming the field and the limit; nothing reaches a target', async () => {
    const { first } = await refused({
      resourceSubscriptions: [gw.targets.alpha.uri(0), `alpha://${'x'.repeat(8000)}`],
    });
    expect(first?.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(
        /notifications\.resourceSubscriptions\[1\]: a resource URI is at most 8000 characters/,
      ),
      data: { field: 'notifications.resourceSubscriptions', limit: 8000 },
    });
  });

  it('a flood of 20,000 resource URIs: -32602 naming the limit, nothing reaches a target; then an ordinary listen is acknowledged', async () => {
    const { alpha } = gw.targets;
    const [gateway] = gw.instances as [GatewayUnderTest];
    const trouble = environmentTrouble(gateway);
    const { first } = await refused({ resourceSubscriptions: Array.from({ length: 20_000 }, (_, i) => alpha.uri(i)) });
    expect(first?.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('maxResourceSubscriptionsPerListen'),
      data: { field: 'notifications.resourceSubscriptions', limit: 100 },
    });
    const ordinary = await openListen(
      gw.url,
      'after-flood',
      { resourceSubscriptions: [alpha.uri(0), alpha.uri(1), alpha.uri(2)] },
      AbortSignal.timeout(20_000),
    );
    ordinary.close();
    expect(ordinary.first).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { resourceSubscriptions: [alpha.uri(0), alpha.uri(1), alpha.uri(2)] } },
    });
    // The same environment answered: none was lost to the flood and replaced.
    expect(environmentTrouble(gateway)).toEqual(trouble);
  });
});

describe('a listen with as many URIs as the cap', () => {
  const gw = gatewayFixture();

  it('lists each target once (not once per URI), and acknowledges every URI a target serves', async () => {
    const { alpha, beta } = gw.targets;
    const { uris, served } = capUris(alpha, beta);
    expect(uris).toHaveLength(100);
    const opened = await openListen(gw.url, 'cap', { resourceSubscriptions: uris }, AbortSignal.timeout(20_000));
    try {
      expect(opened.first).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
      expect([...(opened.first?.params.notifications.resourceSubscriptions ?? [])].sort()).toEqual([...served].sort());
    } finally {
      opened.close();
    }
    for (const target of [alpha, beta]) {
      // The cache was cold: one listing of each kind (templates for the URI no target lists), one listen.
      expect(received(target)).toMatchObject({
        'resources/list': 1,
        'resources/templates/list': 1,
        'subscriptions/listen': 1,
      });
    }
  });
});

describe('two listens at once on a cold cache', () => {
  const gw = gatewayFixture();

  it('share one live listing per target', async () => {
    const { alpha, beta } = gw.targets;
    const { uris } = capUris(alpha, beta);
    const signal = AbortSignal.timeout(20_000);
    const both = await Promise.all([
      openListen(gw.url, 'first', { resourceSubscriptions: uris }, signal),
      openListen(gw.url, 'second', { resourceSubscriptions: [...uris].reverse() }, signal),
    ]);
    for (const opened of both) {
      opened.close();
      expect(opened.first).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
      expect(opened.first?.params.notifications.resourceSubscriptions).toHaveLength(99);
    }
    for (const target of [alpha, beta]) {
      expect(received(target)).toMatchObject({
        'resources/list': 1,
        'resources/templates/list': 1,
        'subscriptions/listen': 2,
      });
    }
  });
});
