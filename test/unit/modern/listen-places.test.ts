import { parseListenFilter } from '../../../lambda/modern/listen-filter';
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
  it('keeps what was asked for with true and non-empty lists, without duplicates', () => {
    expect(
      parseListenFilter({
        notifications: {
          toolsListChanged: true,
          promptsListChanged: false,
          resourceSubscriptions: ['a://x', 'a://x'],
          taskIds: [],
        },
      }),
    ).toEqual({ toolsListChanged: true, resourceSubscriptions: ['a://x'] });
  });

  it('refuses a missing or malformed filter with -32602', () => {
    for (const params of [{}, { notifications: [] }, { notifications: { taskIds: [1] } }]) {
      expect(() => parseListenFilter(params)).toThrow(expect.objectContaining({ kind: 'InvalidParams' }));
    }
  });
});
