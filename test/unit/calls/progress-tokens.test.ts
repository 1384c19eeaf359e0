import { ProgressMapper } from '../../../lambda/calls/progress-tokens';
import type { JSONRPCNotification } from '../../../lambda/protocol/types';

/** Progress tokens per call (calls/progress-tokens.ts): the target sees one unique to the call, the client its own. */

const progress = (progressToken: unknown, progressValue = 1): JSONRPCNotification => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken, progress: progressValue, total: 10 } as JSONRPCNotification['params'],
});

describe("a call's progress tokens", () => {
  it('give the target a token of the call’s own, different for every call', () => {
    const a = new ProgressMapper('client-token');
    const b = new ProgressMapper('client-token');
    expect(a.targetToken).toMatch(/^gw-progress-/);
    expect(a.targetToken).not.toBe(b.targetToken);
  });

  it('give the target no token when the client asked for no progress', () => {
    const mapper = new ProgressMapper(undefined);
    expect(mapper.targetToken).toBeUndefined();
    expect(mapper.map(progress('anything'))).toBeUndefined();
  });

  it("map the call's progress back to the client's token, numeric ones included", () => {
    const mapper = new ProgressMapper(42);
    expect(mapper.map(progress(mapper.targetToken, 3))).toEqual(progress(42, 3));
  });

  it("drop progress of another token (another call's, a stale one), and leave other notifications alone", () => {
    const mapper = new ProgressMapper('client-token');
    expect(mapper.map(progress('gw-progress-other'))).toBeUndefined();
    expect(mapper.map(progress('client-token'))).toBeUndefined();
    const log: JSONRPCNotification = {
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level: 'info', data: 'x' },
    };
    expect(mapper.map(log)).toBe(log);
  });

  it('keep the token a call taken over from another instance gave the target already', () => {
    const mapper = new ProgressMapper('client-token', 'gw-progress-earlier');
    expect(mapper.targetToken).toBe('gw-progress-earlier');
    expect(mapper.map(progress('gw-progress-earlier'))).toEqual(progress('client-token'));
  });
});
