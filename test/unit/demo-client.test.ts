import type { ElicitRequest, Tool } from '@modelcontextprotocol/sdk/types.js';
import { printable } from '../../dev/demo-client/printable';
import { hyperlink, linkLines, supportsHyperlinks } from '../../dev/demo-client/terminal-links';
import { chooseTool, defaultArgumentsFor, UsageError } from '../../dev/demo-client/tools';
import { whoAsks } from '../../dev/demo-client/who-asks';
import { confirmationForm } from '../../lambda/policy/confirm-tools';

/**
 * The demo client's decisions, case by case (test/integration/demo-client.test.ts runs it against a
 * gateway): who asks, how a link is shown on which terminal, which tool a name means.
 */

type Params = ElicitRequest['params'];
const confirmation = confirmationForm('demo___use_aws', 'demo', 'use_aws', { command: 'ls' }) as Params;
const targetForm: Params = {
  mode: 'form',
  message: 'Run `ls`?',
  requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } } },
};
const consent: Params = {
  mode: 'url',
  message: 'Connect your account at github',
  elicitationId: 'e1',
  url: 'https://gw.example/connect?link=gw1.abcdefgh.iv.body',
};
const targetPage: Params = {
  mode: 'url',
  message: 'Authorize',
  elicitationId: 'e2',
  url: 'https://target.example/consent/1',
};

describe('who asks', () => {
  it.each([
    ['the confirmation, marked as a gateway question', 'gw-Qabc', confirmation, 'gateway'],
    ['the consent page, marked as a gateway question', 'gw-Qabc', consent, 'gateway'],
    [
      'the consent page behind a publicUrl with a path',
      'gw-Qabc',
      { ...consent, url: 'https://x.example/gw/connect?link=l' },
      'gateway',
    ],
    ["a 2026-07-28 target's form (asked by the gateway on its behalf)", 'gw-Qabc', targetForm, 'target'],
    ["a target's page", 'gw-Qabc', targetPage, 'target'],
    ['a page at /connect without a link', 'gw-Qabc', { ...consent, url: 'https://gw.example/connect' }, 'target'],
    ["a 2025-11-25 target's request posing as the confirmation", 'gw-Habc', confirmation, 'target'],
    ["a 2025-11-25 target's request posing as the consent page", 'gw-Dabc', consent, 'target'],
    ['a numeric id', 7, confirmation, 'target'],
  ] as const)('%s', (_case, id, params, expected) => {
    expect(whoAsks(id, params as Params)).toBe(expected);
  });
});

describe('terminal hyperlinks', () => {
  const tty = { isTTY: true };
  it.each([
    [{ TERM_PROGRAM: 'iTerm.app', TERM_PROGRAM_VERSION: '3.4.19' }, true],
    [{ TERM_PROGRAM: 'iTerm.app', TERM_PROGRAM_VERSION: '3.0.1' }, false],
    [{ TERM_PROGRAM: 'vscode', TERM_PROGRAM_VERSION: '1.95.0' }, true],
    [{ TERM_PROGRAM: 'vscode', TERM_PROGRAM_VERSION: '1.71.2' }, false],
    [{ TERM_PROGRAM: 'Apple_Terminal' }, false],
    [{ VTE_VERSION: '7200' }, true],
    [{ VTE_VERSION: '4601' }, false],
    [{ WT_SESSION: 'x' }, true],
    [{ TERM: 'xterm-kitty' }, true],
    [{ TERM: 'xterm-256color' }, false],
    [{ TERM: 'xterm-kitty', CI: 'true' }, false],
    [{ TERM: 'xterm-256color', FORCE_HYPERLINK: '1' }, true],
    [{ TERM: 'xterm-kitty', FORCE_HYPERLINK: '0' }, false],
  ])('on a terminal %j: %s', (env, expected) => {
    expect(supportsHyperlinks(tty, env)).toBe(expected);
  });

  it('never when piped, unless forced', () => {
    expect(supportsHyperlinks({ isTTY: false }, { TERM: 'xterm-kitty' })).toBe(false);
    expect(supportsHyperlinks({}, { FORCE_HYPERLINK: 'true' })).toBe(true);
  });

  const lead = '  open this page in a browser and decide there: ';
  const long = new URL(`https://gw.example/connect?link=${'x'.repeat(380)}`);

  it('a long URL is a short text on the line where hyperlinks show, the whole URL elsewhere', () => {
    expect(linkLines(lead, long, { hyperlinks: true, columns: 80 })).toEqual([
      `${lead}${hyperlink(long.href, 'gw.example/connect?…')}`,
      '  (a link: click it, or Ctrl/⌘-click; --full-links prints it whole)',
    ]);
    expect(linkLines(lead, long, { hyperlinks: false, columns: 80 })).toEqual([`${lead}${long.href}`]);
  });

  it('a short text that does not fit after the lead gets a line of its own, cut to fit', () => {
    const host = new URL(`https://${'h'.repeat(60)}.example/a/very/long/path?x=${'y'.repeat(300)}`);
    const [first, second] = linkLines(lead, host, { hyperlinks: true, columns: 60 });
    expect(first).toBe(lead.trimEnd());
    expect(second).toContain(`\u001b]8;;${host.href}\u001b\\`);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the OSC 8 sequences are taken out to measure.
    const visible = second!.replace(/\u001b]8;;[^\u001b]*\u001b\\/g, '');
    expect(visible.length).toBeLessThanOrEqual(60);
    expect(visible.endsWith('…')).toBe(true);
  });

  it('a URL that fits the line, or a line of its own, is printed whole (no hyperlink needed)', () => {
    const short = new URL('http://127.0.0.1:3001/consent/0b7c4c39-5d5e-4cf5-9a53-3b1f1f0c9a11');
    expect(linkLines(lead, short, { hyperlinks: true, columns: 80 })).toEqual([`${lead}${short.href}`]);
    expect(linkLines('  ', short, { hyperlinks: true, columns: 80 })).toEqual([`  ${short.href}`]);
  });

  it("a target's text cannot drive the terminal: control characters are shown, not sent", () => {
    expect(printable('ok\u001b]8;;https://evil.example\u001b\\click\u0007\r\nnext\tline')).toBe(
      'ok\uFFFD]8;;https://evil.example\uFFFD\\click\uFFFD\uFFFD\nnext\tline',
    );
  });
});

describe('which tool a name means', () => {
  const tool = (name: string, inputSchema: Tool['inputSchema'] = { type: 'object' }): Tool => ({ name, inputSchema });
  const tools = [
    tool('demo___use_aws', { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] }),
    tool('demo___echo', { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }),
    tool('github___connect_account'),
  ];
  const url = 'http://127.0.0.1:8080/mcp';

  it('a listed name is its tool; a mistyped one is refused with the name meant', () => {
    expect(chooseTool(tools, 'demo___echo', url)).toBe(tools[1]);
    expect(() => chooseTool(tools, 'demo___ecco', url)).toThrow(
      new UsageError(
        `no tool "demo___ecco" at ${url}; did you mean "demo___echo"? (--list lists the tools); nothing was called`,
      ),
    );
    expect(() => chooseTool(tools, 'echo', url)).toThrow(/did you mean "demo___echo"\?/);
    expect(() => chooseTool(tools, 'something_else', url)).toThrow(`no tool "something_else" at ${url} (--list`);
  });

  it("a per-user target's tools are called before they are listed (its connect_account tool is)", () => {
    expect(chooseTool(tools, 'github___list_repos', url)).toBe('unlisted');
    expect(() => chooseTool(tools, 'gitlab___list_repos', url)).toThrow(UsageError);
  });

  it('without --arguments: the defaults the tool takes, or a refusal with an example', () => {
    expect(defaultArgumentsFor(tools[0]!)).toEqual({ command: 'aws s3 ls' });
    expect(defaultArgumentsFor(tools[2]!)).toEqual({});
    expect(() => defaultArgumentsFor(tools[1]!)).toThrow(
      new UsageError(`demo___echo takes "text": give its arguments, e.g. --arguments '{"text":"…"}'`),
    );
  });
});
