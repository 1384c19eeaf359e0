import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../lambda/config/schema';
import { checkConfigText, formatProblems } from '../../lib/config/check';
import { runCli } from '../support/cli';

/**
 * `npm start -- --check-config FILE` (also `npm run check-config -- FILE`): a configuration file is
 * checked as a whole, every problem at once, each at its line and column, a misspelt key with the
 * key it most likely meant. The rules are the zod schema's; these tests pin what the reader sees.
 */

function fileWith(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'check-config-')), 'gateway.json');
  writeFileSync(file, text);
  return file;
}

function problemsOf(text: string): string {
  const checked = checkConfigText(text);
  return checked.ok ? 'valid' : formatProblems('f.json', checked.problems);
}

describe('--check-config FILE', () => {
  it('reports three different mistakes in one file at once, each at its line:column, with "did you mean"', async () => {
    const file = fileWith(
      [
        '{',
        '  "targets": [',
        '    { "name": "docs", "url": "https://docs.example.com/mcp", "hedaers": { "x-api-key": "k" } }',
        '  ],',
        '  "sessionTimeoutSeconds": 60,',
        '  "toolNamePrefix": "sometimes"',
        '}',
      ].join('\n'),
    );
    const cli = runCli(['--check-config', file]);
    expect(await cli.exited).toBe(1);
    expect(cli.output().stdout).toBe('');
    expect(cli.output().stderr).toBe(
      [
        'invalid configuration, 3 problems:',
        `${file}:3:62 targets[0].hedaers: unknown key; did you mean "headers"?`,
        `${file}:5:3 sessionTimeoutSeconds: Too small: expected number to be >=900`,
        `${file}:6:3 toolNamePrefix: Invalid option: expected one of "always"|"conditional"|"never"`,
        '',
      ].join('\n'),
    );
  }, 40_000);

  it('says a valid file is valid and exits 0, starting nothing', async () => {
    const file = fileWith(JSON.stringify({ targets: [{ name: 'docs', url: 'https://docs.example.com/mcp' }] }));
    const cli = runCli(['--check-config', file]);
    expect(await cli.exited).toBe(0);
    expect(cli.output()).toEqual({ stdout: `${file}: valid\n`, stderr: '' });
  }, 40_000);

  it('gives a JSON syntax error its line and column', async () => {
    const file = fileWith('{\n  "targets": [],\n  "logLevel": "INFO",\n}\n');
    const cli = runCli(['--check-config', file]);
    expect(await cli.exited).toBe(1);
    expect(cli.output().stderr).toBe(
      `invalid configuration, 1 problem:\n${file}:4:1 expected another property after ',' (JSON has no trailing commas), found "}"\n`,
    );
  }, 40_000);
});

describe('what the check says, in place', () => {
  it.each([
    [
      'a missing comma',
      '{\n  "targets": []\n  "logLevel": "INFO"\n}',
      'f.json:3:3 expected \',\' or \'}\' after the value of "targets", found "\\""',
    ],
    [
      'a comment',
      '{\n  // targets\n}',
      'f.json:2:3 expected a property name in double quotes, found "/" (JSON has no comments)',
    ],
    [
      'single quotes',
      "{ 'targets': [] }",
      'f.json:1:3 expected a property name in double quotes, found "\'" (JSON strings take double quotes)',
    ],
    ['an empty file', '  \n', 'f.json:2:1 the file is empty; expected a JSON object'],
    [
      'an unclosed object',
      '{ "targets": []',
      "f.json:1:16 expected ',' or '}' after the value of \"targets\", found the end of the file",
    ],
  ])('a syntax error: %s', (_why, text, expected) => {
    expect(problemsOf(text)).toBe(expected);
  });

  it('suggests the key meant inside nested objects and unions (auth, oauth, tool filters)', () => {
    const text = JSON.stringify(
      {
        auth: {
          type: 'jwt',
          discoveryUrl: 'https://idp.example/.well-known/openid-configuration',
          allowedAudience: ['a'],
        },
        targets: [
          {
            name: 'jira',
            url: 'https://jira.example/mcp',
            oauth: {
              tokenUrl: 'https://idp.example/token',
              clientId: 'gw',
              clientSecret: { fromEnv: 'S' },
              scope: ['x'],
            },
            tools: { inclde: ['read_*'] },
          },
        ],
        cors: { allowedOrigin: ['http://localhost:6274'] },
      },
      null,
      2,
    );
    expect(problemsOf(text)).toBe(
      [
        'f.json:5:5 auth.allowedAudience: unknown key; did you mean "allowedAudiences"?',
        'f.json:19:9 targets[0].oauth.scope: unknown key; did you mean "scopes"?',
        'f.json:23:7 targets[0].tools: give "include", "exclude" or both',
        'f.json:24:9 targets[0].tools.inclde: unknown key; did you mean "include"?',
        'f.json:31:5 cors.allowedOrigin: unknown key; did you mean "allowedOrigins"?',
      ].join('\n'),
    );
  });

  it('offers no suggestion for a key unlike any known one', () => {
    expect(problemsOf('{"colour": "blue"}')).toBe('f.json:1:2 colour: unknown key');
  });

  it('shows a missing required field where its object starts', () => {
    expect(problemsOf('{\n  "targets": [\n    { "name": "docs" }\n  ]\n}')).toBe(
      'f.json:3:5 targets[0].url: required, missing',
    );
  });

  it('never echoes a value (a file may hold an inline credential)', () => {
    const out = problemsOf(
      JSON.stringify({
        targets: [{ name: 'x', url: 'https://x.example/mcp', headers: { 'bad header': 'sk-secret-123' } }],
      }),
    );
    expect(out).toContain('targets[0].headers');
    expect(out).not.toContain('sk-secret-123');
  });

  it('accepts "$schema" at the top (editors read it; the gateway ignores it)', () => {
    const text = JSON.stringify({ $schema: '../schema/gateway-config.schema.json', targets: [] });
    expect(problemsOf(text)).toBe('valid');
    expect(parseConfig(JSON.parse(text)).targets).toEqual([]);
  });
});
