/** JSON-RPC 2.0 and MCP error codes (both eras). */
export const RpcCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Transport-level refusals without a JSON-RPC meaning (405, 401, 403). */
  ServerError: -32000,
  RequestTimeout: -32001,
  /** 2025: a resource that does not exist (2026-07-28 uses -32602). */
  ResourceNotFound: -32002,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
  UrlElicitationRequired: -32042,
} as const;
