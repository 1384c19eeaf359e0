/**
 * The gateway's own names for per-user connections: its pages and endpoints (./consent-routes.ts
 * serves them) and the tool a target not yet connected to shows (./user-connections.ts). Light to
 * import: the demo client tells the gateway's questions and tools by them.
 */

/** The tool a per-user target shows in place of its own until the principal has connected to it. */
export const CONNECT_TOOL = 'connect_account';

/** The consent page: `<publicUrl>/connect?link=<sealed link>`. */
export const CONNECT_PATH = '/connect';
/** Each target's OAuth callback is `<CALLBACK_PATH>/<target>` (a distinct redirect URI per target). */
export const CALLBACK_PATH = '/connect/callback';
export const IDENTITY_PATH = '/connect/identity';
export const CONNECTIONS_PATH = '/connections';
/** Each target's OAuth Client ID Metadata Document is `<CLIENT_METADATA_PATH>/<target>.json` (its URL is the client id). */
export const CLIENT_METADATA_PATH = '/connect/client';

export const callbackPath = (target: string) => `${CALLBACK_PATH}/${target}`;
export const clientMetadataPath = (target: string) => `${CLIENT_METADATA_PATH}/${target}.json`;
