import { MAX_LISTEN_URI_LENGTH, parseListenFilter } from '../../../lambda/modern/listen-filter';
import { ListenPlaces } from '../../../lambda/modern/listen-places';

/** A principal's open listens on one instance (modern/listen.ts), and the filter a listen asks for. */
describe('the listens of a principal on an instance', () => {
  it('takes places up to the maximum, refuses the next with TooManyListens (429), and takes again once one is given back', () => {
    const places = new ListenPlaces(2);
    const first = places.take('alice');
    places.take('alice');
    expect(() => places.take('alice')).toThrow(expect.objectContaining({ kind: 'TooManyListens' }));
    expect(() => places.take('bob')).not.toThrow();
    first();
    first(); // given back once only
    expect(() => places.take('alice')).not.toThrow();
    expect(() => places.take('alice')).toThrow(expect.objectContaining({ kind: 'TooManyListens' }));
  });
});

describe('the filter of a listen', () => {
  const LIMITS = { resourceSubscriptions: 3, taskIds: 2 };

  it('keeps what was asked for with true and non-empty lists, without duplicates', () => {
    expect(
      parseListenFilter(
        {
          notifications: {
            toolsListChanged: true,
            promptsListChanged: false,
            resourceSubscriptions: ['a://x', 'a://x'],
            taskIds: [],
          },
        },
        LIMITS,
      ),
    ).toEqual({ toolsListChanged: true, resourceSubscriptions: ['a://x'] });
  });

  it('refuses a missing or malformed filter with -32602', () => {
    for (const params of [{}, { notifications: [] }, { notifications: { taskIds: [1] } }]) {
      expect(() => parseListenFilter(params, LIMITS)).toThrow(expect.objectContaining({ kind: 'InvalidParams' }));
    }
  });

  it('takes as many URIs and task ids as the limits allow, and refuses one more (-32602 naming the field and the setting)', () => {
    expect(
      parseListenFilter(
        { notifications: { resourceSubscriptions: ['a://1', 'a://2', 'a://3'], taskIds: ['t1', 't2'] } },
        LIMITS,
      ),
    ).toEqual({ resourceSubscriptions: ['a://1', 'a://2', 'a://3'], taskIds: ['t1', 't2'] });
    expect(() =>
      parseListenFilter({ notifications: { resourceSubscriptions: ['a://1', 'a://1', 'a://1', 'a://1'] } }, LIMITS),
    ).toThrow(
      expect.objectContaining({
        kind: 'InvalidParams',
        message: expect.stringContaining(
          'notifications.resourceSubscriptions: at most 3 resource URIs per listen (maxResourceSubscriptionsPerListen); 4 given',
        ),
        data: { field: 'notifications.resourceSubscriptions', limit: 3 },
      }),
    );
    expect(() => parseListenFilter({ notifications: { taskIds: ['t1', 't2', 't3'] } }, LIMITS)).toThrow(
      expect.objectContaining({
        kind: 'InvalidParams',
        message: expect.stringContaining('notifications.taskIds: at most 2 task ids per listen (maxTaskIdsPerListen)'),
        data: { field: 'notifications.taskIds', limit: 2 },
      }),
    );
  });

  it(`takes a URI of ${MAX_LISTEN_URI_LENGTH} characters and refuses a longer one, naming its place`, () => {
    const longest = `a://${'x'.repeat(MAX_LISTEN_URI_LENGTH - 4)}`;
    expect(parseListenFilter({ notifications: { resourceSubscriptions: [longest] } }, LIMITS)).toEqual({
      resourceSubscriptions: [longest],
    });
    expect(() =>
      parseListenFilter({ notifications: { resourceSubscriptions: ['a://1', `${longest}x`] } }, LIMITS),
    ).toThrow(
      expect.objectContaining({
        kind: 'InvalidParams',
        message: expect.stringContaining(
          `notifications.resourceSubscriptions[1]: a resource URI is at most ${MAX_LISTEN_URI_LENGTH} characters`,
        ),
      }),
    );
  });
});
