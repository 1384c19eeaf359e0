import { honourable, isEmptyFilter, LIST_FLAG_NAMES, parseListenFilter } from '../../../lambda/modern/listen-filter';
import type { ModernServerCapabilities } from '../../../lambda/protocol/types';

/**
 * What a server can honour of a listen's filter (modern/listen-filter.ts `honourable`, as the SDK servers
 * narrow their acknowledgements), and the parts of parsing the filter the listen-places test leaves out.
 * The limits are pinned in listen-places.test.ts.
 */

const LIMITS = { resourceSubscriptions: 10, taskIds: 10 };
const EVERYTHING = {
  toolsListChanged: true,
  promptsListChanged: true,
  resourcesListChanged: true,
  resourceSubscriptions: ['a://1'],
  taskIds: ['t-1'],
};

describe('what a server can honour of a filter', () => {
  it('is each list change its capabilities declare listChanged for', () => {
    const caps: ModernServerCapabilities = {
      tools: { listChanged: true },
      prompts: { listChanged: false },
      resources: {},
    };
    expect(honourable({ toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true }, caps)).toEqual({
      toolsListChanged: true,
    });
  });

  it('is the resource subscriptions only when it declares resources.subscribe', () => {
    expect(honourable({ resourceSubscriptions: ['a://1'] }, { resources: { subscribe: true } })).toEqual({
      resourceSubscriptions: ['a://1'],
    });
    expect(honourable({ resourceSubscriptions: ['a://1'] }, { resources: { listChanged: true } })).toEqual({});
  });

  it('keeps task ids: a target is only ever asked for its own', () => {
    expect(honourable({ taskIds: ['t-1'] }, {})).toEqual({ taskIds: ['t-1'] });
  });

  it('is only the task ids for a server that declared nothing', () => {
    expect(honourable(EVERYTHING, undefined)).toEqual({ taskIds: ['t-1'] });
  });

  it('is everything for a server that declares everything, and never what was not asked', () => {
    const all: ModernServerCapabilities = {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { listChanged: true, subscribe: true },
    };
    expect(honourable(EVERYTHING, all)).toEqual(EVERYTHING);
    expect(honourable({}, all)).toEqual({});
  });
});

describe('a filter', () => {
  it('is empty when it asks for nothing', () => {
    expect(isEmptyFilter({})).toBe(true);
    expect(isEmptyFilter({ toolsListChanged: true })).toBe(false);
  });

  it('takes a list flag only when it is true', () => {
    const filter = parseListenFilter(
      { notifications: { toolsListChanged: 'yes', promptsListChanged: 1, resourcesListChanged: true } },
      LIMITS,
    );
    expect(filter).toEqual({ resourcesListChanged: true });
  });

  it('refuses a list that is not an array of strings, naming it', () => {
    expect(() => parseListenFilter({ notifications: { resourceSubscriptions: 'a://1' } }, LIMITS)).toThrow(
      'Invalid params: notifications.resourceSubscriptions must be an array of strings',
    );
    expect(() => parseListenFilter({ notifications: { taskIds: ['t', null] } }, LIMITS)).toThrow(
      'Invalid params: notifications.taskIds must be an array of strings',
    );
  });

  it('knows the three list flags of the specification', () => {
    expect(LIST_FLAG_NAMES).toEqual(['toolsListChanged', 'promptsListChanged', 'resourcesListChanged']);
  });
});
