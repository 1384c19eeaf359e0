/**
 * Links on the terminal. A consent link is ~400 characters (a sealed state in its query) and would wrap
 * over several lines: where the terminal shows OSC 8 hyperlinks, a short text (host, path, `?…`) that
 * fits the line is printed, linked to the whole URL; elsewhere, when piped, or with `--full-links`,
 * the whole URL. A link that fits the line as it is is printed as it is.
 */

export interface LinkDisplay {
  /** OSC 8 hyperlinks may be printed (supportsHyperlinks), and `--full-links` was not given. */
  hyperlinks: boolean;
  /** The terminal's width. */
  columns: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Whether the terminal on `stream` shows OSC 8 hyperlinks, by what terminals tell about themselves (as
 * the `supports-hyperlinks` package decides). `FORCE_HYPERLINK=1` or `=0` decides instead. A terminal
 * not known to show them gets the whole URL: a short text there could be neither clicked nor copied.
 */
export function supportsHyperlinks(stream: { isTTY?: boolean }, env: Env = process.env): boolean {
  const forced = env.FORCE_HYPERLINK;
  if (forced !== undefined && forced !== '') return !/^(0|false)$/i.test(forced);
  if (!stream.isTTY || env.CI || env.TERM === 'dumb') return false;
  if (env.WT_SESSION) return true; // Windows Terminal
  const version = env.TERM_PROGRAM_VERSION ?? '';
  switch (env.TERM_PROGRAM) {
    case 'iTerm.app':
      return atLeast(version, [3, 1]);
    case 'vscode':
      return atLeast(version, [1, 72]);
    case 'WezTerm':
    case 'ghostty':
      return true;
  }
  if (Number(env.VTE_VERSION) >= 5000) return true; // GNOME Terminal, Tilix, … (VTE 0.50)
  return ['xterm-kitty', 'xterm-ghostty', 'alacritty', 'foot', 'foot-extra', 'wezterm'].includes(env.TERM ?? '');
}

function atLeast(version: string, wanted: [number, number]): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > wanted[0] || (major === wanted[0] && minor >= wanted[1]);
}

/** `text` shown, `url` opened: OSC 8 (ESC ] 8 ; ; URL ST text ESC ] 8 ; ; ST). */
export function hyperlink(url: string, text: string): string {
  return `\u001b]8;;${url}\u001b\\${text}\u001b]8;;\u001b\\`;
}

/**
 * The lines that show `url` after `lead` (e.g. "  open this page …: "). The URL must be http(s): it is
 * printed as the URL parser writes it, which leaves no control character in it.
 */
export function linkLines(lead: string, url: URL, display: LinkDisplay): string[] {
  const whole = url.href;
  // A URL that fits the line, or one line of its own, is printed whole: that works on any terminal.
  const fits = lead.length + whole.length <= display.columns || whole.length + 4 <= display.columns;
  if (fits || !display.hyperlinks) return [`${lead}${whole}`];
  const short = `${url.host}${url.pathname}${url.search || url.hash ? '?…' : ''}`;
  const hint = '  (a link: click it, or Ctrl/⌘-click; --full-links prints it whole)';
  if (lead.length + short.length <= display.columns) return [`${lead}${hyperlink(whole, short)}`, hint];
  const room = Math.max(10, display.columns - 4);
  const text = short.length <= room ? short : `${short.slice(0, room - 1)}…`;
  return [lead.trimEnd(), `    ${hyperlink(whole, text)}`, hint];
}
