import { GatewayError } from '../protocol/errors';
import { decodeMirrored, hasValidHeaderCharacters, MCP_HEADERS, trimHeader } from '../protocol/headers';
import { isObject } from '../protocol/jsonrpc';
import { isLogLevel, LOG_LEVELS } from '../protocol/log-levels';
import { META_KEYS, nameSourceOf } from '../protocol/meta';
import { MODERN_METHODS } from '../protocol/methods';
import type {
  Implementation,
  JSONRPCRequest,
  ModernClientCapabilities,
  ProgressToken,
  RequestId,
} from '../protocol/types';
import { modernVersionsOf } from '../protocol/versions';

/**
 * Validation of a 2026-07-28 request, in the order the spec's rules and the official SDK's
 * validation ladder apply them (a request failing several rules gets the first):
 *  1. `_meta` envelope: required keys present and well-typed          → -32602, HTTP 400
 *  2. `MCP-Protocol-Version` header equals the `_meta` version          → -32020, HTTP 400
 *  3. the version is one this gateway serves statelessly                → -32022, HTTP 400 (+supported, requested)
 *  4. `MCP-Protocol-Version`, `Mcp-Method` present; `Mcp-Method` equals
 *     the body; `Mcp-Name` present and equal (after `=?base64?…?=`
 *     decoding) for tools/call, prompts/get, resources/read            → -32020, HTTP 400
 *  5. the method exists in 2026-07-28 (`initialize`, `ping`,
 *     `logging/setLevel`, `resources/subscribe`, … do not)               → -32601, HTTP 404
 * `Mcp-Session-Id` and `Last-Event-ID` are not looked at.
 */

export interface ModernRequest {
  id: RequestId;
  method: string;
  params: Record<string, unknown>;
  protocolVersion: string;
  clientCapabilities: ModernClientCapabilities;
  clientInfo?: Implementation;
  logLevel?: string;
  progressToken?: ProgressToken;
}

export function validateModernRequest(
  request: JSONRPCRequest,
  headers: Headers,
  supportedVersions: readonly string[],
): { ok: true; request: ModernRequest } | { ok: false; error: GatewayError } {
  const fail = (
    kind: ConstructorParameters<typeof GatewayError>[0],
    message: string,
    data?: Record<string, unknown>,
  ) => ({
    ok: false as const,
    error: new GatewayError(kind, message, data),
  });
  const mismatch = (message: string, header: string, body: string) =>
    fail('HeaderMismatch', `Bad Request: headers and body disagree: ${message}`, { mismatch: { header, body } });
  const params = (isObject(request.params) ? request.params : {}) as Record<string, unknown>;
  const meta = isObject(params._meta) ? params._meta : undefined;
  const versionHeader = trimHeader(headers.get(MCP_HEADERS.protocolVersion));
  const methodHeader = trimHeader(headers.get(MCP_HEADERS.method));
  const nameHeader = trimHeader(headers.get(MCP_HEADERS.name));

  if (request.method === 'initialize' && !(meta && META_KEYS.protocolVersion in meta)) {
    return mismatch(
      'an initialize request (the 2025 handshake) carries a 2026-07-28 MCP-Protocol-Version header',
      versionHeader ?? '',
      'initialize',
    );
  }

  // 1. The envelope.
  const missing = !meta
    ? ['_meta']
    : [META_KEYS.protocolVersion, META_KEYS.clientCapabilities].filter((key) => !(key in meta));
  if (missing.length) {
    return fail('MalformedParams', `Invalid params: missing required _meta key(s): ${missing.join(', ')}`, { missing });
  }
  const version = meta![META_KEYS.protocolVersion];
  const capabilities = meta![META_KEYS.clientCapabilities];
  const clientInfo = meta![META_KEYS.clientInfo];
  const logLevel = meta![META_KEYS.logLevel];
  const invalid = (key: string, problem: string) =>
    fail('MalformedParams', `Invalid params: _meta ${key}: ${problem}`, { invalid: key });
  if (typeof version !== 'string' || version.length === 0)
    return invalid(META_KEYS.protocolVersion, 'expected a protocol version string');
  if (!isObject(capabilities)) return invalid(META_KEYS.clientCapabilities, 'expected an object');
  if (
    clientInfo !== undefined &&
    !(isObject(clientInfo) && typeof clientInfo.name === 'string' && typeof clientInfo.version === 'string')
  ) {
    return invalid(META_KEYS.clientInfo, 'expected {name, version}');
  }
  if (logLevel !== undefined && !isLogLevel(logLevel)) {
    return invalid(META_KEYS.logLevel, `expected one of ${LOG_LEVELS.join(', ')}`);
  }

  // 2. Header and body name the same version.
  if (versionHeader !== undefined && versionHeader !== version) {
    return mismatch(
      `_meta names protocol version ${version} but MCP-Protocol-Version is ${versionHeader}`,
      versionHeader,
      version,
    );
  }

  // 3. A version served here (2025 versions need initialize, so they are not served this way).
  if (!modernVersionsOf(supportedVersions).includes(version)) {
    return fail('UnsupportedProtocolVersion', `Unsupported protocol version: ${version}`, {
      supported: [...supportedVersions].sort().reverse(),
      requested: version,
    });
  }

  // 4. The mirrored headers.
  if (versionHeader === undefined)
    return mismatch('the required MCP-Protocol-Version header is absent', '(missing)', version);
  if (methodHeader === undefined)
    return mismatch(
      `the body names method ${request.method} but the required Mcp-Method header is absent`,
      '(missing)',
      request.method,
    );
  if (!hasValidHeaderCharacters(methodHeader) || methodHeader !== request.method) {
    return mismatch(
      `the body names method ${request.method} but Mcp-Method is ${methodHeader}`,
      methodHeader,
      request.method,
    );
  }
  const source = nameSourceOf(request.method);
  const bodyName = source ? params[source] : undefined;
  if (source && typeof bodyName === 'string') {
    if (nameHeader === undefined) {
      return mismatch(
        `the body carries params.${source}="${bodyName}" but the required Mcp-Name header is absent`,
        '(missing)',
        bodyName,
      );
    }
    const decoded = hasValidHeaderCharacters(nameHeader) ? decodeMirrored(nameHeader) : undefined;
    if (decoded === undefined)
      return mismatch('Mcp-Name carries invalid characters or an invalid =?base64?…?= value', nameHeader, bodyName);
    if (decoded !== bodyName)
      return mismatch(
        `the body carries params.${source}="${bodyName}" but Mcp-Name names "${decoded}"`,
        nameHeader,
        bodyName,
      );
  }

  // 5. The method exists in this protocol version.
  if (!MODERN_METHODS.has(request.method)) {
    return fail('UnknownMethod', `Method not found: ${request.method} (not part of protocol ${version})`);
  }

  const progressToken = meta!.progressToken;
  return {
    ok: true,
    request: {
      id: request.id,
      method: request.method,
      params,
      protocolVersion: version,
      clientCapabilities: capabilities as ModernClientCapabilities,
      clientInfo: clientInfo as Implementation | undefined,
      logLevel: logLevel as string | undefined,
      progressToken: typeof progressToken === 'string' || typeof progressToken === 'number' ? progressToken : undefined,
    },
  };
}
