import { discover } from '../../../lambda/modern/discover';
import { TASKS_EXTENSION } from '../../../lambda/protocol/meta';
import type { ModernServerCapabilities } from '../../../lambda/protocol/types';
import { fakeTarget, modernCaller, modernDeps } from '../../support/modern-deps';

/**
 * `server/discover` for a 2026-07-28 client (modern/discover.ts): every configured version newest
 * first, capabilities merged from the reachable targets — list changes and resource subscriptions only
 * as far as they can reach subscriptions/listen — the Tasks extension when a target declares it, 60 s,
 * private.
 */

async function discovered(targets: Parameters<typeof modernDeps>[0], config = {}) {
  const { deps } = modernDeps(targets, { config });
  return discover(deps, modernCaller(deps), new AbortController().signal);
}

const caps = (result: Record<string, unknown>) => result.capabilities as ModernServerCapabilities;

describe('the discovery of the gateway', () => {
  it('names every configured version newest first, for 60 s, privately', async () => {
    const result = await discovered([fakeTarget('modern')], {
      supportedVersions: ['2025-06-18', '2026-07-28', '2025-11-25'],
    });
    expect(result).toMatchObject({
      supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18'],
      ttlMs: 60_000,
      cacheScope: 'private',
    });
  });

  it('offers a feature any reachable target offers, completions and logging as plain objects', async () => {
    const result = await discovered([
      fakeTarget('a', { capabilities: { tools: {}, completions: {} } }),
      fakeTarget('b', { capabilities: { prompts: {}, logging: {} } }),
    ]);
    expect(caps(result)).toEqual({ tools: {}, prompts: {}, completions: {}, logging: {} });
  });

  it('offers list changes and resource subscriptions a 2026-07-28 target declares (they reach subscriptions/listen)', async () => {
    const result = await discovered([
      fakeTarget('modern', {
        capabilities: { tools: { listChanged: true }, resources: { subscribe: true, listChanged: false } },
      }),
    ]);
    expect(caps(result)).toEqual({ tools: { listChanged: true }, resources: { subscribe: true } });
  });

  it("takes a 2025 target's capabilities from its InitializeResult, without list changes when it refuses GET streams", async () => {
    const declared = { tools: { listChanged: true }, resources: { subscribe: true } };
    expect(caps(await discovered([fakeTarget('legacy', { era: 'legacy', capabilities: declared })]))).toEqual(declared);
    expect(
      caps(await discovered([fakeTarget('legacy', { era: 'legacy', capabilities: declared, refusesStreams: true })])),
    ).toEqual({ tools: {}, resources: {} });
  });

  it('offers tools, prompts and resources (without list changes) for a 2026-07-28 target it never probed', async () => {
    expect(caps(await discovered([fakeTarget('configured', { undiscovered: true })]))).toEqual({
      tools: {},
      prompts: {},
      resources: {},
    });
  });

  it('merges list changes across targets: one that offers them is enough', async () => {
    const result = await discovered([
      fakeTarget('quiet', { capabilities: { tools: {} } }),
      fakeTarget('loud', { capabilities: { tools: { listChanged: true } } }),
    ]);
    expect(caps(result).tools).toEqual({ listChanged: true });
  });

  it('declares the Tasks extension exactly when a target does', async () => {
    const withTasks = { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } as ModernServerCapabilities;
    expect(caps(await discovered([fakeTarget('t', { capabilities: withTasks })]))).toHaveProperty(
      ['extensions', TASKS_EXTENSION],
      {},
    );
    expect(caps(await discovered([fakeTarget('t')]))).not.toHaveProperty('extensions');
  });

  it('leaves out a target it cannot reach, and offers what the others do', async () => {
    const result = await discovered([
      fakeTarget('down', { unreachable: true, capabilities: { logging: {} } }),
      fakeTarget('up', { capabilities: { prompts: {} } }),
    ]);
    expect(caps(result)).toEqual({ prompts: {} });
  });

  it('fails when its request was cancelled, instead of answering with what it found', async () => {
    const { deps } = modernDeps([fakeTarget('down', { unreachable: true })]);
    const cancelled = new AbortController();
    cancelled.abort();
    await expect(discover(deps, modernCaller(deps), cancelled.signal)).rejects.toThrow();
  });
});
