import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FLAGS, flagTableMarkdown, helpText, parseFlags, UsageError } from '../../dev/cli-flags';

/** The flags of `npm start`: one table makes the parser, --help and the table in docs/local.md. */

const usageError = (argv: string[]): string => {
  try {
    parseFlags(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
};

describe('parseFlags', () => {
  it('gives the documented defaults when no flag is given', () => {
    const { values, given } = parseFlags([]);
    expect(values).toEqual({
      port: 8080,
      host: '127.0.0.1',
      config: undefined,
      'check-config': undefined,
      'dynamodb-endpoint': undefined,
      'dynamodb-port': undefined,
      'no-demo': false,
      'demo-port': 3001,
      'demo-modern-port': 3002,
      'demo-url': undefined,
      'demo-modern-url': undefined,
      lambda: false,
      'web-function': false,
      'log-format': undefined,
      'log-level': undefined,
      help: false,
    });
    expect(given.size).toBe(0);
  });

  it('reads values in both spellings and records which flags were given', () => {
    const { values, given } = parseFlags([
      '--port=0',
      '--dynamodb-endpoint',
      'http://127.0.0.1:8000',
      '--demo-url',
      'http://127.0.0.1:3001/mcp',
      '--demo-modern-port',
      '4002',
      '-h',
    ]);
    expect(values).toMatchObject({
      port: 0,
      'dynamodb-endpoint': 'http://127.0.0.1:8000',
      'demo-url': 'http://127.0.0.1:3001/mcp',
      'demo-modern-port': 4002,
      help: true,
    });
    expect([...given].sort()).toEqual(['demo-modern-port', 'demo-url', 'dynamodb-endpoint', 'help', 'port']);
  });

  it('names an unknown flag in one line, with the nearest real one', () => {
    expect(usageError(['--prot', '1'])).toBe('unknown flag --prot (did you mean --port?)');
    expect(usageError(['--demoport', '1'])).toBe('unknown flag --demoport (did you mean --demo-port?)');
    expect(usageError(['--verbose'])).toBe('unknown flag --verbose');
  });

  it('refuses bad values, missing values, values on switches and stray arguments', () => {
    expect(usageError(['--port', 'abc'])).toBe('--port: not a port number: abc (0–65535)');
    expect(usageError(['--demo-port', '70000'])).toBe('--demo-port: not a port number: 70000 (0–65535)');
    expect(usageError(['--dynamodb-port', '-1'])).toBe('--dynamodb-port needs a value (N)');
    expect(usageError(['--port'])).toBe('--port needs a value (N)');
    expect(usageError(['--demo-url', 'localhost:3001'])).toBe('--demo-url: not an http(s) URL: localhost:3001');
    expect(usageError(['--dynamodb-endpoint', 'nope'])).toBe('--dynamodb-endpoint: not a URL: nope');
    expect(usageError(['--no-demo=yes'])).toBe('--no-demo takes no value');
    expect(usageError(['8080'])).toBe("unexpected argument '8080': flags start with --");
    expect(usageError(['--host', ' '])).toBe('--host: needs a value');
  });

  it('takes a log format and a log level in any case, written as documented; refuses others', () => {
    expect(parseFlags(['--log-format', 'JSON', '--log-level', 'debug']).values).toMatchObject({
      'log-format': 'json',
      'log-level': 'DEBUG',
    });
    expect(usageError(['--log-format', 'pretty'])).toBe('--log-format: not one of human, json: pretty');
    expect(usageError(['--log-level', 'verbose'])).toBe(
      '--log-level: not one of DEBUG, INFO, WARN, ERROR, SILENT: verbose',
    );
  });

  it('refuses flags that exclude each other', () => {
    expect(usageError(['--dynamodb-port', '8000', '--dynamodb-endpoint', 'http://127.0.0.1:8000'])).toBe(
      '--dynamodb-port and --dynamodb-endpoint cannot be combined: the port is for the embedded DynamoDB',
    );
    expect(usageError(['--demo-url', 'http://127.0.0.1:3001/mcp', '--demo-port', '3001'])).toBe(
      '--demo-port and --demo-url cannot be combined: a demo target is either started here or used at a URL',
    );
    expect(usageError(['--no-demo', '--demo-modern-port', '0'])).toBe(
      '--demo-modern-port and --no-demo cannot be combined: --no-demo starts no demo target',
    );
  });
});

describe('--help and docs/local.md', () => {
  it('--help describes every flag with its value and default', () => {
    const help = helpText();
    for (const [name, spec] of Object.entries(FLAGS)) {
      const label = spec.kind === 'value' ? `--${name} ${spec.placeholder}` : `--${name}`;
      expect(help).toMatch(new RegExp(`^ {2}(-\\w, )?${label} `, 'm'));
      if (spec.shownDefault) expect(help).toContain(`[default: ${spec.shownDefault.replace(/`/g, '')}]`);
    }
    expect(help).toContain(
      "--lambda                 serve the deployment bundle with Lambda's execution model (the other",
    );
    expect(help).toContain('Exit status: 0 after SIGINT or SIGTERM, 1 when start-up fails, 2 for a bad command line.');
    expect(Math.max(...help.split('\n').map((line) => line.length))).toBeLessThanOrEqual(100);
  });

  it("docs/local.md's flag table is the one the definitions make", () => {
    const readme = readFileSync(join(__dirname, '../../docs/local.md'), 'utf8');
    const table = flagTableMarkdown();
    if (!readme.includes(table)) {
      throw new Error(`docs/local.md: replace the flag table with\n\n${table}\n`);
    }
    expect(table.split('\n')).toHaveLength(Object.keys(FLAGS).length + 2);
  });

  it("docs/local.md's flag table is a block of its own, and the text up to the next heading is the docs' own", () => {
    const doc = readFileSync(join(__dirname, '../../docs/local.md'), 'utf8');
    const table = flagTableMarkdown();
    const at = doc.indexOf(table);
    expect(at).toBeGreaterThan(0);
    // A line right after the table would be read as a row of it, or (`> …`) as a quote under it.
    const end = at + table.length;
    expect({ before: doc.slice(at - 2, at), after: doc.slice(end, end + 2) }).toEqual({
      before: '\n\n',
      after: '\n\n',
    });
    const section = doc.slice(end).split(/^#{1,6} /m)[0] ?? '';
    expect(pastedToolOutput(section)).toEqual([]);
  });
});

/** Lines outside fenced blocks that a test runner or a stack trace printed, not a writer. */
function pastedToolOutput(markdown: string): string[] {
  const prose = markdown.replace(/^ *```[\s\S]*?^ *```/gm, '');
  return prose
    .split('\n')
    .filter((line) =>
      /^\s*(?:> )?\d+ \||^\s*at .+:\d+:\d+\)?$|^(?:Test Suites|Tests|Snapshots|Time):\s|^Ran all test suites|^\s*●/.test(
        line,
      ),
    );
}
