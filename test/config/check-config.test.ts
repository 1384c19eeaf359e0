import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parseConfig } from '../../lambda/config/schema';
import { type CheckOptions, checkConfigText, formatProblems } from '../../lib/config/check';
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

const ROOT = join(__dirname, '../..');

const NO_TARGETS =
  'note: no targets: a gateway with this file offers no tools, prompts or resources (npm start adds its demo targets unless --no-demo)';

function problemsOf(text: string, options: CheckOptions = { env: {} }): string {
  const checked = checkConfigText(text, options);
  const listed = formatProblems('f.json', checked.problems);
  return checked.ok ? ['valid', ...(listed ? [listed] : [])].join('\n') : listed;
}

/** Ten distinct mistakes: three the schema finds, six rules across fields, one unset environment variable. */
const TEN_MISTAKES = [
  '{',
  '  "auth": { "type": "jwt", "discoveryUrl": "https://idp.example/.well-known/openid-configuration" },',
  '  "sessionTimeoutSeconds": 60,',
  '  "pendingRequestTimeoutSeconds": 3600,',
  '  "streamLogTtlSeconds": 600,',
  '  "targets": [',
  '    { "name": "docs", "url": "https://docs.example/mcp", "hedaers": { "x-api-key": "k" } },',
  '    { "name": "docs", "url": "https://docs2.example/mcp" },',
  '    { "name": "wiki" },',
  '    {',
  '      "name": "tickets",',
  '      "url": "https://tickets.example/mcp",',
  '      "headers": { "authorization": { "fromEnv": "CHECK_CONFIG_UNSET_TOKEN" } },',
  '      "oauth": { "tokenUrl": "https://idp.example/token", "clientId": "gw", "clientSecret": { "fromEnv": "CHECK_CONFIG_SECRET" } }',
  '    },',
  '    {',
  '      "name": "github",',
  '      "url": "https://github.example/mcp",',
  '      "userOAuth": { "clientSecret": { "fromEnv": "CHECK_CONFIG_SECRET" } }',
  '    }',
  '  ]',
  '}',
].join('\n');

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

describe('--check-config FILE tells everything at once', () => {
  it('reports ten distinct mistakes (schema, rules across fields, duplicates, an unset variable), each at its line:column', async () => {
    const file = fileWith(TEN_MISTAKES);
    const cli = runCli(['--check-config', file], { GATEWAY_LOG_LEVEL: 'SILENT', CHECK_CONFIG_SECRET: 'set' });
    expect(await cli.exited).toBe(1);
    expect(cli.output().stdout).toBe('');
    expect(cli.output().stderr).toBe(
      [
        'invalid configuration, 9 problems, 1 warning:',
        `${file}:1:1 connections.identityLogin: targets with userOAuth behind JWT auth need connections.identityLogin: the consent page signs the user in to prove the link is theirs`,
        `${file}:3:3 sessionTimeoutSeconds: Too small: expected number to be >=900`,
        `${file}:4:3 pendingRequestTimeoutSeconds: must not exceed streamLogTtlSeconds (600) unless streamRelease is "never": a released call's stream would expire while it still waits`,
        `${file}:7:58 targets[0].hedaers: unknown key; did you mean "headers"?`,
        `${file}:8:7 targets[1].name: duplicate target name "docs"`,
        `${file}:9:5 targets[2].url: required, missing`,
        `${file}:13:7 targets[3].headers: an "authorization" header and "oauth" both set the Authorization header; keep one`,
        `${file}:13:39 warning: targets[3].headers.authorization: environment variable CHECK_CONFIG_UNSET_TOKEN is not set here: npm start with this file stops on it (the gateway reads it at start)`,
        `${file}:19:7 targets[4].userOAuth.authorizationServer: a clientSecret is sent only to the authorization server it was issued by: name its issuer in authorizationServer`,
        `${file}:19:22 targets[4].userOAuth.clientSecret: a clientSecret needs its clientId`,
        '',
      ].join('\n'),
    );
  }, 40_000);

  it('says that an example that checks valid names a variable unset here, where, and that npm start stops on it', async () => {
    const file = relative(ROOT, join(ROOT, 'examples/config/two-targets.json'));
    const warning = `${file}:21:27 warning: targets[1].oauth.clientSecret: environment variable TICKETS_CLIENT_SECRET is not set here: npm start with this file stops on it (the gateway reads it at start)`;
    const unset = runCli(['--check-config', file], { GATEWAY_LOG_LEVEL: 'SILENT', TICKETS_CLIENT_SECRET: '' });
    expect(await unset.exited).toBe(0);
    expect(unset.output()).toEqual({ stdout: `${file}: valid, 1 warning:\n${warning}\n`, stderr: '' });

    const set = runCli(['--check-config', file], { GATEWAY_LOG_LEVEL: 'SILENT', TICKETS_CLIENT_SECRET: 'x' });
    expect(await set.exited).toBe(0);
    expect(set.output()).toEqual({ stdout: `${file}: valid\n`, stderr: '' });
  }, 40_000);

  it('npm start --config stops on that variable before starting anything, at its line:column', async () => {
    const file = relative(ROOT, join(ROOT, 'examples/config/two-targets.json'));
    const cli = runCli(['--config', file, '--no-demo', '--port', '0'], {
      GATEWAY_LOG_LEVEL: 'SILENT',
      TICKETS_CLIENT_SECRET: '',
    });
    expect(await cli.exited).toBe(1);
    expect(cli.output()).toEqual({
      stdout: '',
      stderr: [
        'cannot start in this shell, 1 problem:',
        `${file}:21:27 targets[1].oauth.clientSecret: environment variable TICKETS_CLIENT_SECRET is not set: the gateway reads it at start; set it in the shell that runs npm start`,
        '',
      ].join('\n'),
    });
  }, 40_000);

  it('notes that a file without targets offers nothing (valid, exit 0)', async () => {
    const file = fileWith('{}\n');
    const cli = runCli(['--check-config', file]);
    expect(await cli.exited).toBe(0);
    expect(cli.output()).toEqual({
      stdout: `${file}: valid, 1 note:\n${file}:1:1 note: no targets: a gateway with this file offers no tools, prompts or resources (npm start adds its demo targets unless --no-demo)\n`,
      stderr: '',
    });
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
    expect(problemsOf(text, { env: { S: 'set' } })).toBe(
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
    expect(problemsOf('{"colour": "blue"}')).toBe(`f.json:1:1 ${NO_TARGETS}\nf.json:1:2 colour: unknown key`);
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
    expect(problemsOf(text)).toBe(`valid\nf.json:1:51 ${NO_TARGETS}`);
    expect(parseConfig(JSON.parse(text)).targets).toEqual([]);
  });

  it('writes array indices as targets[1], not targets.1', () => {
    expect(
      problemsOf('{"targets": [{"name": "a", "url": "https://a.example/mcp"}, {"name": "b", "url": "ftp://b"}]}'),
    ).toBe('f.json:1:75 targets[1].url: an http(s) URL');
  });

  it.each([
    [
      'userOAuth with an authorization header',
      { name: 'a', url: 'https://a.example/mcp', headers: { Authorization: 'x' }, userOAuth: {} },
      'targets[0].userOAuth: userOAuth sets the Authorization header per user; drop "oauth" and any "authorization" header',
    ],
    [
      'a clientSecret without its clientId',
      {
        name: 'a',
        url: 'https://a.example/mcp',
        userOAuth: { clientSecret: { fromEnv: 'S' }, authorizationServer: 'https://as.example' },
      },
      'targets[0].userOAuth.clientSecret: a clientSecret needs its clientId',
    ],
    [
      'a clientSecret without the authorization server it was issued by',
      { name: 'a', url: 'https://a.example/mcp', userOAuth: { clientId: 'c', clientSecret: { fromEnv: 'S' } } },
      'targets[0].userOAuth.authorizationServer: a clientSecret is sent only to the authorization server it was issued by: name its issuer in authorizationServer',
    ],
  ])('tells a rule across fields (%s) although another field is invalid too', (_rule, target, expected) => {
    const out = problemsOf(JSON.stringify({ logLevel: 'LOUD', targets: [target] }), { env: { S: 'set' } });
    expect(out.split('\n')).toHaveLength(2);
    expect(out).toContain('logLevel: Invalid option');
    expect(out).toContain(expected);
  });

  it('tells a rule across fields once when it is the only problem', () => {
    const text = JSON.stringify({
      targets: [
        { name: 'a', url: 'https://a.example/mcp' },
        { name: 'a', url: 'https://b.example/mcp' },
      ],
    });
    expect(problemsOf(text)).toBe('f.json:1:57 targets[1].name: duplicate target name "a"');
  });

  it('a rule whose own fields are invalid waits for them (their problem is told)', () => {
    const text = JSON.stringify({ pendingRequestTimeoutSeconds: '3600', streamLogTtlSeconds: 60, targets: [] });
    expect(problemsOf(text)).toBe(
      [
        'f.json:1:2 pendingRequestTimeoutSeconds: Invalid input: expected number, received string',
        `f.json:1:65 ${NO_TARGETS}`,
      ].join('\n'),
    );
  });

  it('an unset variable that only a sign-in reads is a warning, also when starting; one read at start stops a start', () => {
    const text = JSON.stringify({
      targets: [
        {
          name: 'a',
          url: 'https://a.example/mcp',
          headers: { 'x-api-key': { fromEnv: 'AT_START' } },
          userOAuth: { clientId: { fromEnv: 'AT_SIGN_IN' } },
        },
      ],
    });
    const start = checkConfigText(text, { env: {}, purpose: 'start' });
    expect(start.ok).toBe(false);
    expect(start.problems.map((p) => [p.severity, p.path, p.variable])).toEqual([
      ['error', 'targets[0].headers.x-api-key', 'AT_START'],
      ['warning', 'targets[0].userOAuth.clientId', 'AT_SIGN_IN'],
    ]);
    expect(formatProblems('f.json', start.problems.slice(1))).toBe(
      "f.json:1:127 warning: targets[0].userOAuth.clientId: environment variable AT_SIGN_IN is not set here: a user's sign-in through this client fails without it",
    );
    const check = checkConfigText(text, { env: { AT_START: '' } });
    expect(check.ok).toBe(true);
    expect(check.problems.map((p) => p.severity)).toEqual(['warning', 'warning']);
    expect(checkConfigText(text, { env: { AT_START: 'k', AT_SIGN_IN: 'c' } })).toMatchObject({
      ok: true,
      problems: [],
    });
  });

  it('notes an empty targets list where it is written', () => {
    expect(problemsOf('{\n  "targets": []\n}')).toBe(`valid\nf.json:2:3 ${NO_TARGETS}`);
  });
});

describe('policies', () => {
  const withPolicies = (policies: string, argumentTypes: Record<string, string> = {}) =>
    JSON.stringify(
      {
        targets: [{ name: 'payments', url: 'https://payments.example/mcp' }],
        policy: { policies, argumentTypes },
      },
      null,
      2,
    );

  it('the finance example is valid', () => {
    const text = withPolicies(
      '@id("finance") permit (principal is McpGateway::User, action, resource == McpGateway::Tool::"payments___refund")\nwhen { principal.groups.contains("finance") && context.arguments has amount && context.arguments.amount <= 500 };',
      { amount: 'Long' },
    );
    expect(problemsOf(text)).toBe('valid');
  });

  it("a policy's mistakes are told with the rest, at the policies field, with the line and column in the policy text", () => {
    const text = withPolicies('permit (principal, action, resource)\nwhen { principal.group == "finance" };', {
      amount: 'Decimal',
    });
    const told = problemsOf(text);
    // The schema's own problem (an argument type it does not know) stops before the policies are read.
    expect(told).toMatch(/^f\.json:\d+:\d+ policy\.argumentTypes\.amount: Invalid option/m);
    const fixed = problemsOf(
      withPolicies('permit (principal, action, resource)\nwhen { principal.group == "finance" };'),
    );
    expect(fixed).toMatch(/^f\.json:\d+:\d+ policy\.policies: policy line 2, column 8: .*attribute `group`/m);
  });
});
