/** How `npm start` writes its logs: lines for a person (`human`) or the Lambda's JSON lines (`json`). */
export type LogFormat = 'human' | 'json';

/** `human` on a terminal; `json` when the output goes to a file or a pipe (another program reads it). */
export function defaultLogFormat(stdout: { isTTY?: boolean } = process.stdout): LogFormat {
  return stdout.isTTY ? 'human' : 'json';
}

/**
 * Whether to colour what goes to `stream`: a terminal that shows colours, unless `NO_COLOR` is set to
 * anything (no-color.org). Node's `hasColors` reads `FORCE_COLOR`, `NODE_DISABLE_COLORS` and `TERM`.
 */
export function colourFor(
  stream: { isTTY?: boolean; hasColors?: (env?: object) => boolean },
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (env.NO_COLOR) return false;
  return stream.isTTY === true && typeof stream.hasColors === 'function' && stream.hasColors(env);
}
