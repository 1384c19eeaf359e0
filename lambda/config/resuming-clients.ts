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
 * rest). Each entry is checked against the client's own source; docs/clients.md gives the evidence.
 */
export const DEFAULT_RESUMING_CLIENTS: ClientPattern[] = [];
