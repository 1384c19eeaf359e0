import { StoreUnavailableError } from '../../../lambda/protocol/errors';
import { systemClock } from '../../../lambda/scheduling/clock';
import { untilProcessed } from '../../../lambda/state/dynamo/table';

/**
 * What DynamoDB leaves unprocessed in a batch (throttling) is sent again, a bounded number of times,
 * by one helper for the store's batched reads and writes.
 */
describe('untilProcessed', () => {
  it('sends again only what was left unprocessed, until nothing is', async () => {
    const sent: number[][] = [];
    await untilProcessed(systemClock, [1, 2, 3], 3, 'writes', async (requests) => {
      sent.push(requests);
      return requests.slice(1); // one processed per attempt
    });
    expect(sent).toEqual([[1, 2, 3], [2, 3], [3]]);
  });

  it('sends nothing for nothing', async () => {
    const send = jest.fn(async () => []);
    await untilProcessed(systemClock, [], 3, 'reads', send);
    expect(send).not.toHaveBeenCalled();
  });

  it('fails as StoreUnavailable (503, retryable) when items are still left after the last attempt', async () => {
    let attempts = 0;
    const failure = await untilProcessed(systemClock, ['a'], 2, 'reads', async (requests) => {
      attempts++;
      return requests;
    }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(StoreUnavailableError);
    expect(String((failure as Error).cause ?? failure)).toMatch(/unprocessed reads after 2 attempts/);
    expect(attempts).toBe(2);
  });
});
