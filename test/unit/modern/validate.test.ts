import { validateModernRequest } from '../../../lambda/modern/validate';
import { type GatewayError, httpStatusOf } from '../../../lambda/protocol/errors';
import { encodeMirrored } from '../../../lambda/protocol/headers';
import { META_KEYS } from '../../../lambda/protocol/meta';
import type { JSONRPCRequest } from '../../../lambda/protocol/types';
import { DEFAULT_SUPPORTED_VERSIONS } from '../../../lambda/protocol/versions';

/**
 * The validation ladder of a 2026-07-28 request (modern/validate.ts, modern/README.md "Validation
 * order"): the envelope (-32602), the header's version against the body's (-32020), a version served
 * statelessly (-32022), the mirrored headers (-32020), the method's existence (-32601/404); the first
 * failing rule answers.
 */

const VERSION = '2026-07-28';
const CAPS = { elicitation: { form: {} } };

function meta(change: Record<string, unknown> = {}): Record<string, unknown> {
  return { [META_KEYS.protocolVersion]: VERSION, [META_KEYS.clientCapabilities]: CAPS, ...change };
}

/** `NO_META`: the request carries no `_meta` at all. */
const NO_META = Symbol('no _meta');

function request(method: string, params: Record<string, unknown> = {}, metaValue: unknown = meta()): JSONRPCRequest {
  return {
    jsonrpc: '2.0',
    id: 7,
    method,
    params: metaValue === NO_META ? params : { ...params, _meta: metaValue },
  } as JSONRPCRequest;
}

/** The headers a conforming client sends for `method` (and `name`, when the method mirrors one). */
function headers(method: string, name?: string, change: Record<string, string | undefined> = {}): Headers {
  const all: Record<string, string | undefined> = {
    'mcp-protocol-version': VERSION,
    'mcp-method': method,
    ...(name !== undefined ? { 'mcp-name': encodeMirrored(name) } : {}),
    ...change,
  };
  const out = new Headers();
  for (const [key, value] of Object.entries(all)) if (value !== undefined) out.set(key, value);
  return out;
}

function refusal(result: ReturnType<typeof validateModernRequest>): GatewayError {
  if (result.ok) throw new Error('expected a refusal');
  return result.error;
}

const validate = (req: JSONRPCRequest, h: Headers, supported: readonly string[] = DEFAULT_SUPPORTED_VERSIONS) =>
  validateModernRequest(req, h, supported);

describe('a valid 2026-07-28 request', () => {
  it('is taken with its id, method, params, version, capabilities, client info, log level and progress token', () => {
    const clientInfo = { name: 'client', version: '1.0.0' };
    const result = validate(
      request(
        'tools/call',
        { name: 'echo', arguments: { x: 1 } },
        meta({ [META_KEYS.clientInfo]: clientInfo, [META_KEYS.logLevel]: 'info', progressToken: 'p-1' }),
      ),
      headers('tools/call', 'echo'),
    );
    if (!result.ok) throw result.error;
    expect(result.request).toMatchObject({
      id: 7,
      method: 'tools/call',
      protocolVersion: VERSION,
      clientCapabilities: CAPS,
      clientInfo,
      logLevel: 'info',
      progressToken: 'p-1',
    });
    expect(result.request.params.arguments).toEqual({ x: 1 });
  });

  it('takes a numeric progress token and drops one of another type', () => {
    const numeric = validate(request('tools/list', {}, meta({ progressToken: 3 })), headers('tools/list'));
    const object = validate(request('tools/list', {}, meta({ progressToken: { a: 1 } })), headers('tools/list'));
    expect(numeric.ok && numeric.request.progressToken).toBe(3);
    expect(object.ok && object.request.progressToken).toBeUndefined();
  });

  it('needs no clientInfo, and ignores Mcp-Session-Id and Last-Event-ID', () => {
    const result = validate(
      request('tools/list'),
      headers('tools/list', undefined, { 'mcp-session-id': 'whatever', 'last-event-id': 'e-1' }),
    );
    expect(result.ok).toBe(true);
  });

  it('reads header values without the surrounding whitespace HTTP allows', () => {
    const result = validate(
      request('prompts/get', { name: 'greet' }),
      headers('prompts/get', undefined, {
        'mcp-protocol-version': ` ${VERSION}\t`,
        'mcp-method': ' prompts/get ',
        'mcp-name': ' greet',
      }),
    );
    expect(result.ok).toBe(true);
  });

  it('matches an Mcp-Name sent in the =?base64?…?= form against the decoded name', () => {
    const name = 'café ☕';
    const encoded = encodeMirrored(name);
    expect(encoded.startsWith('=?base64?')).toBe(true);
    expect(
      validate(request('tools/call', { name }), headers('tools/call', undefined, { 'mcp-name': encoded })).ok,
    ).toBe(true);
  });
});

describe('rule 1: the _meta envelope (-32602, HTTP 400)', () => {
  it('refuses a request without _meta, naming it missing', () => {
    const error = refusal(validate(request('tools/list', {}, NO_META), headers('tools/list')));
    expect(error.kind).toBe('MalformedParams');
    expect(error.spec.code).toBe(-32602);
    expect(httpStatusOf(error)).toBe(400);
    expect(error.data).toEqual({ missing: ['_meta'] });
  });

  it('names each required key that is missing', () => {
    const error = refusal(validate(request('tools/list', {}, {}), headers('tools/list')));
    expect(error.data).toEqual({ missing: [META_KEYS.protocolVersion, META_KEYS.clientCapabilities] });
    const noCaps = refusal(
      validate(request('tools/list', {}, { [META_KEYS.protocolVersion]: VERSION }), headers('tools/list')),
    );
    expect(noCaps.data).toEqual({ missing: [META_KEYS.clientCapabilities] });
  });

  it('refuses mistyped keys, naming the key: an empty version, capabilities not an object, clientInfo without a version, an unknown log level', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [meta({ [META_KEYS.protocolVersion]: '' }), META_KEYS.protocolVersion],
      [meta({ [META_KEYS.protocolVersion]: 20260728 }), META_KEYS.protocolVersion],
      [meta({ [META_KEYS.clientCapabilities]: 'all' }), META_KEYS.clientCapabilities],
      [meta({ [META_KEYS.clientInfo]: { name: 'client' } }), META_KEYS.clientInfo],
      [meta({ [META_KEYS.logLevel]: 'verbose' }), META_KEYS.logLevel],
    ];
    for (const [envelope, key] of cases) {
      const error = refusal(validate(request('tools/list', {}, envelope), headers('tools/list')));
      expect({ kind: error.kind, data: error.data }).toEqual({ kind: 'MalformedParams', data: { invalid: key } });
    }
  });

  it('answers before every later rule: a request failing several gets the envelope refusal', () => {
    const error = refusal(validate(request('ping', {}, { [META_KEYS.protocolVersion]: '2025-11-25' }), new Headers()));
    expect(error.kind).toBe('MalformedParams');
  });
});

describe('rules 2 and 3: the version', () => {
  it('refuses an MCP-Protocol-Version header that names another version than _meta (-32020), before the version is looked at', () => {
    const error = refusal(
      validate(
        request('tools/list', {}, meta({ [META_KEYS.protocolVersion]: '2099-01-01' })),
        headers('tools/list', undefined, { 'mcp-protocol-version': VERSION }),
      ),
    );
    expect(error.kind).toBe('HeaderMismatch');
    expect(error.spec.code).toBe(-32020);
    expect(error.data).toEqual({ mismatch: { header: VERSION, body: '2099-01-01' } });
  });

  it('refuses a version not served statelessly with -32022, listing every configured version newest first and the one requested', () => {
    const error = refusal(
      validate(
        request('tools/list', {}, meta({ [META_KEYS.protocolVersion]: '2025-11-25' })),
        headers('tools/list', undefined, { 'mcp-protocol-version': '2025-11-25' }),
        ['2025-06-18', VERSION, '2025-11-25'],
      ),
    );
    expect(error.kind).toBe('UnsupportedProtocolVersion');
    expect(error.spec.code).toBe(-32022);
    expect(httpStatusOf(error)).toBe(400);
    expect(error.data).toEqual({ supported: [VERSION, '2025-11-25', '2025-06-18'], requested: '2025-11-25' });
  });

  it('refuses 2026-07-28 itself when the configuration does not serve it', () => {
    const error = refusal(validate(request('tools/list'), headers('tools/list'), ['2025-11-25']));
    expect(error.kind).toBe('UnsupportedProtocolVersion');
  });
});

describe('rule 4: the mirrored headers (-32020, HTTP 400)', () => {
  const mismatchOf = (req: JSONRPCRequest, h: Headers) => {
    const error = refusal(validate(req, h));
    expect(error.kind).toBe('HeaderMismatch');
    expect(httpStatusOf(error)).toBe(400);
    return (error.data as { mismatch: { header: string; body: string } }).mismatch;
  };

  it('needs the MCP-Protocol-Version header', () => {
    expect(
      mismatchOf(request('tools/list'), headers('tools/list', undefined, { 'mcp-protocol-version': undefined })),
    ).toEqual({ header: '(missing)', body: VERSION });
  });

  it('needs an Mcp-Method header equal to the body method', () => {
    expect(mismatchOf(request('tools/list'), headers('tools/list', undefined, { 'mcp-method': undefined }))).toEqual({
      header: '(missing)',
      body: 'tools/list',
    });
    expect(mismatchOf(request('tools/list'), headers('prompts/list'))).toEqual({
      header: 'prompts/list',
      body: 'tools/list',
    });
  });

  it('needs an Mcp-Name equal to params.name for tools/call and prompts/get, and to params.uri for resources/read', () => {
    expect(mismatchOf(request('tools/call', { name: 'echo' }), headers('tools/call'))).toEqual({
      header: '(missing)',
      body: 'echo',
    });
    expect(mismatchOf(request('prompts/get', { name: 'greet' }), headers('prompts/get', 'other'))).toEqual({
      header: 'other',
      body: 'greet',
    });
    expect(mismatchOf(request('resources/read', { uri: 'file:///a' }), headers('resources/read', 'file:///b'))).toEqual(
      { header: 'file:///b', body: 'file:///a' },
    );
    expect(validate(request('resources/read', { uri: 'file:///a' }), headers('resources/read', 'file:///a')).ok).toBe(
      true,
    );
  });

  it('needs an Mcp-Name mirroring params.taskId for the Tasks extension requests', () => {
    expect(mismatchOf(request('tasks/get', { taskId: 'gw1.t' }), headers('tasks/get'))).toEqual({
      header: '(missing)',
      body: 'gw1.t',
    });
    expect(validate(request('tasks/cancel', { taskId: 'gw1.t' }), headers('tasks/cancel', 'gw1.t')).ok).toBe(true);
  });

  it('refuses an Mcp-Name whose =?base64?…?= value does not decode, or carries characters a header cannot', () => {
    expect(
      mismatchOf(
        request('tools/call', { name: 'echo' }),
        headers('tools/call', undefined, { 'mcp-name': '=?base64?%%%?=' }),
      ),
    ).toEqual({ header: '=?base64?%%%?=', body: 'echo' });
  });

  it('does not mirror a completion ref: completion/complete needs no Mcp-Name', () => {
    const result = validate(
      request('completion/complete', { ref: { type: 'ref/prompt', name: 'greet' } }),
      headers('completion/complete'),
    );
    expect(result.ok).toBe(true);
  });

  it('refuses a plain initialize (the 2025 handshake) sent on this path with -32020', () => {
    const error = refusal(
      validate(
        request('initialize', { protocolVersion: '2025-11-25', capabilities: {} }, NO_META),
        headers('initialize'),
      ),
    );
    expect(error.kind).toBe('HeaderMismatch');
    expect(error.data).toEqual({ mismatch: { header: VERSION, body: 'initialize' } });
  });
});

describe('rule 5: the method exists in 2026-07-28 (-32601, HTTP 404)', () => {
  it.each(['ping', 'logging/setLevel', 'resources/subscribe', 'tasks/list', 'no/such'])(
    'refuses %s once every header agrees',
    (method) => {
      const error = refusal(validate(request(method), headers(method)));
      expect(error.kind).toBe('UnknownMethod');
      expect(error.spec.code).toBe(-32601);
      expect(httpStatusOf(error)).toBe(404);
    },
  );

  it('refuses an initialize claiming 2026-07-28 in _meta as an unknown method', () => {
    const error = refusal(validate(request('initialize'), headers('initialize')));
    expect(error.kind).toBe('UnknownMethod');
  });
});
