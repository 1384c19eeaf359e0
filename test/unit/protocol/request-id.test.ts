import { targetCallIdOf } from '../../../lambda/legacy/ids';
import { parseClientMessage } from '../../../lambda/protocol/jsonrpc';
import { rawValueAt, stringifyMessage } from '../../../lambda/protocol/request-id';
import type { Json } from '../../support/mcp-http';

/** The id's JSON text, found without parsing the params and written back exactly. */
describe('request ids kept exactly', () => {
  const parsed = (text: string): Json => {
    const outcome = parseClientMessage(text);
    if (!outcome.ok) throw new Error(outcome.message);
    return outcome.value.message;
  };

  test('the top-level id is found past nested "id" members, strings with quotes and escapes, and escaped keys', () => {
    const text = `{"params":{"id":1,"s":"a\\"id\\":2\\\\","list":[{"id":3}]},"jsonrpc":"2.0","method":"m","\\u0069d":9007199254740993}`;
    expect(rawValueAt(text, ['id'])).toBe('9007199254740993');
    expect(rawValueAt(text, ['params', 'id'])).toBe('1');
    expect(rawValueAt('{"a":[1,{"b":"}"}],"id" : -0 }', ['id'])).toBe('-0');
    expect(rawValueAt('{"a":1}', ['id'])).toBeUndefined();
  });

  test('a number id JSON.parse keeps stays a number; one it cannot keep (beyond 2^53, -0) is written back as sent', () => {
    expect(parsed('{"jsonrpc":"2.0","id":42,"method":"ping"}').id).toBe(42);
    // The same number value, so the same id: no scan of the body for these.
    expect(parsed('{"jsonrpc":"2.0","id":1.0,"method":"ping"}').id).toBe(1);
    expect(parsed('{"jsonrpc":"2.0","id":1e3,"method":"ping"}').id).toBe(1000);
    for (const text of ['9007199254740993', '-0', '-9007199254740993', '1e21']) {
      const request = parsed(`{"jsonrpc":"2.0","method":"ping","params":{"id":7},"id":${text}}`);
      const response = stringifyMessage({ jsonrpc: '2.0', id: request.id, result: {} });
      expect(response).toBe(`{"jsonrpc":"2.0","id":${text},"result":{}}`);
      expect(targetCallIdOf(request.id)).toBe(`c.n.${text}`);
    }
  });

  test('an error response and a string id are written as usual', () => {
    const request = parsed('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}');
    const id = request.id;
    expect(stringifyMessage({ jsonrpc: '2.0', id, error: { code: -32601, message: 'no' } })).toBe(
      '{"jsonrpc":"2.0","id":9007199254740993,"error":{"code":-32601,"message":"no"}}',
    );
    expect(stringifyMessage({ jsonrpc: '2.0', id: 'a"b', result: {} })).toBe(
      '{"jsonrpc":"2.0","id":"a\\"b","result":{}}',
    );
  });

  test("a cancellation derives the cancelled request's upstream id from the same digits", () => {
    const notification = parsed(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740993,"reason":"x"}}',
    );
    const requestId = notification.params.requestId;
    expect(targetCallIdOf(requestId)).toBe('c.n.9007199254740993');
  });

  test('ids over 256 characters and string ids starting with U+0000 are refused (-32600, id null)', () => {
    for (const id of [JSON.stringify('x'.repeat(257)), '1'.repeat(257), JSON.stringify('\u0000#1')]) {
      const outcome = parseClientMessage(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
      expect(outcome).toMatchObject({ ok: false, code: -32600, id: null });
    }
    const cancel = parseClientMessage(
      `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"${'x'.repeat(300)}"}}`,
    );
    expect(cancel).toMatchObject({ ok: false, code: -32600 });
  });
});
