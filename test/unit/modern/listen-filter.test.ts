import {
  admits,
  honourable,
  isEmptyFilter,
  LIST_FLAG_NAMES,
  parseListenFilter,
  within,
} from '../../../lambda/modern/listen-filter';
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

describe('what a server acknowledged, within what it was asked', () => {
  it('keeps only the flags, URIs and task ids it was asked for', () => {
    expect(
      within(
        { ...EVERYTHING, resourceSubscriptions: ['a://1', 'a://2'], taskIds: ['t-1', 't-2'] },
        { toolsListChanged: true, resourceSubscriptions: ['a://2', 'a://3'], taskIds: ['t-2'] },
      ),
    ).toEqual({ toolsListChanged: true, resourceSubscriptions: ['a://2'], taskIds: ['t-2'] });
  });

  it('is empty when nothing acknowledged was asked for, or the acknowledgement is malformed', () => {
    expect(within(EVERYTHING, {})).toEqual({});
    expect(
      within({ toolsListChanged: 'yes', resourceSubscriptions: 'a://1' } as never, {
        toolsListChanged: true,
        resourceSubscriptions: ['a://1'],
      }),
    ).toEqual({});
  });
});

describe('the notifications a filter admits', () => {
  const filter = { promptsListChanged: true, resourceSubscriptions: ['a://1'], taskIds: ['t-1'] };
  const of = (method: string, params?: Record<string, unknown>) =>
    admits(filter, { jsonrpc: '2.0', method, ...(params ? { params } : {}) });

  it('are the list changes it names, updates of its URIs, statuses of its tasks', () => {
    expect(of('notifications/prompts/list_changed')).toBe(true);
    expect(of('notifications/resources/updated', { uri: 'a://1' })).toBe(true);
    expect(of('notifications/tasks', { taskId: 't-1', status: 'working' })).toBe(true);
  });

  it('are nothing else: other lists, URIs and tasks, and any other type', () => {
    expect(of('notifications/tools/list_changed')).toBe(false);
    expect(of('notifications/resources/list_changed')).toBe(false);
    expect(of('notifications/resources/updated', { uri: 'a://2' })).toBe(false);
    expect(of('notifications/resources/updated')).toBe(false);
    expect(of('notifications/tasks', { taskId: 't-2' })).toBe(false);
    expect(of('notifications/message', { level: 'info', data: 'x' })).toBe(false);
    expect(of('notifications/progress', { progressToken: 1, progress: 1 })).toBe(false);
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
