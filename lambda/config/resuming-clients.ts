import * as z from 'zod';

/**
 * Clients by the `clientInfo` they send in `initialize`: the only thing that tells two 2025-11-25
 * clients apart (no header names the SDK a client is built on). `name` is matched exactly or with `*`
 * wildcards; `version`, when given, exactly, with `*` wildcards, or as `>=x.y.z` (dotted numbers).
 */
export const ClientPatternSchema = z.strictObject({
  name: z.string().min(1).max(200),
  version: z
    .string()
    .min(1)
    .max(100)
    .regex(/^(>=\d+(\.\d+)*|[^<>=\s]+)$/, 'an exact version, one with * wildcards, or >=x.y.z')
    .optional(),
});
export type ClientPattern = z.output<typeof ClientPatternSchema>;

/**
 * The default of `streamReleaseClients`: clients whose `clientInfo` identifies a build that resumes a
 * POST stream the server ended (reconnects with `GET` + `Last-Event-ID` after `retry` and takes the
 * rest), read from each client's published package (docs/clients.md gives the file and line of each).
 * A name that builds which do not resume also send with the same version (the Python SDK's default
 * `mcp` 0.1.0, `claude-ai` 0.1.0) is not here: only seeing the client resume can tell.
 */
export const DEFAULT_RESUMING_CLIENTS: ClientPattern[] = [
  // MCP Inspector 0.17.5–1.x web UI (TypeScript SDK >= 1.23 bundled), 2.x (SDK v2), its CLI and TUI.
  { name: 'inspector-client', version: '>=0.17.5' },
  { name: 'mcp-inspector', version: '>=2.0.0' },
  { name: 'inspector-cli', version: '>=0.18.0' },
  { name: 'inspector-tui', version: '>=2.0.0' },
  // Claude Code from 2.0.71 (its transport honours `retry` and reconnects after a priming event).
  { name: 'claude-code', version: '>=2.0.71' },
  // Gemini CLI from 0.26.0 (earlier builds send the constant 0.0.1; its core needs TypeScript SDK ^1.23).
  { name: 'gemini-cli-mcp-client', version: '>=0.26.0' },
  // mcp-remote's own client (a proxied client is renamed "<name> (via mcp-remote X)", matched by nothing here).
  { name: 'mcp-remote', version: '>=0.1.34' },
];
