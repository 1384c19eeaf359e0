/**
 * Era-tagged aliases of the two SDKs' types: `@modelcontextprotocol/sdk` (v1) models the legacy era,
 * `@modelcontextprotocol/server` (v2) the modern one. Code names the era it means.
 */
export type {
  CallToolResult,
  ClientCapabilities as LegacyClientCapabilities,
  ElicitRequestFormParams,
  Implementation,
  InitializeRequestParams,
  InitializeResult,
  JSONRPCErrorResponse,
  JSONRPCMessage,
  JSONRPCNotification,
  JSONRPCRequest,
  JSONRPCResultResponse,
  ProgressToken,
  Prompt,
  RequestId,
  Resource,
  ResourceTemplate,
  Tool,
} from '@modelcontextprotocol/sdk/types.js';
export type {
  ClientCapabilities as ModernClientCapabilities,
  DiscoverResult,
  InputRequest,
  InputRequiredResult,
  ServerCapabilities as ModernServerCapabilities,
} from '@modelcontextprotocol/server';
