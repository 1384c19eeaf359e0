import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * ARCHITECTURE.md's table of what its sections on waiting promise names, for each promise, a test
 * file and a test (`describe › it`): every file exists and holds every part of its test's name, so a
 * test renamed, moved or deleted fails here rather than leaving the table pointing at nothing.
 */

const ROOT = join(__dirname, '../..');
const HEADING = '### What these sections promise, and the test that pins each';

interface Row {
  promise: string;
  file: string;
  test: string;
}

/** The table's rows: the first run of lines starting with `|` after the heading. */
function promiseRows(): Row[] {
  const lines = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8').split('\n');
  const start = lines.indexOf(HEADING);
  if (start < 0) return [];
  const first = lines.findIndex((line, i) => i > start && line.startsWith('|'));
  if (first < 0) return [];
  const after = lines.findIndex((line, i) => i > first && !line.startsWith('|'));
  return lines
    .slice(first + 2, after < 0 ? undefined : after) // past the header and its rule
    .map((line) => {
      const [promise = '', file = '', test = ''] = line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim());
      return { promise, file: file.replace(/^`|`$/g, ''), test: test.replace(/^`|`$/g, '') };
    });
}

/**
 * Whether `name` (one part of a test's name) is a string of `source`: one written out, or one a
 * `describe.each` / `it.each` title or a template literal renders (`%s`, `${…}` standing for anything).
 */
function namedIn(source: string, name: string): boolean {
  const strings = source.match(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`[^`]*`/g) ?? [];
  return strings.some((quoted) => {
    const title = quoted.slice(1, -1).replace(/\\(['"\\])/g, '$1');
    if (title === name) return true;
    if (!/%[sdipjfo#]|\$\{/.test(title)) return false;
    const pattern = title
      .split(/(%[sdipjfo#]|\$\{[^}]*\})/)
      .map((part, i) => (i % 2 ? '.+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('');
    return new RegExp(`^${pattern}$`).test(name);
  });
}

const rows = promiseRows();

test('ARCHITECTURE.md has the table of promises, each row naming a test file under test/ and a test', () => {
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) {
    expect(row).toEqual({
      promise: expect.stringMatching(/\S/),
      file: expect.stringMatching(/^test\/.+\.test\.ts$/),
      test: expect.stringMatching(/\S/),
    });
  }
});

test('every test file the table names exists and holds every part of the test it names', () => {
  const missing = rows.flatMap(({ file, test }) => {
    if (!existsSync(join(ROOT, file))) return [`${file}: no such file`];
    const source = readFileSync(join(ROOT, file), 'utf8');
    return test
      .split(' › ')
      .filter((part) => !namedIn(source, part))
      .map((part) => `${file}: no test named "${part}"`);
  });
  expect(missing).toEqual([]);
});

describe('finding a test name in a file', () => {
  const source = [
    "describe.each(kinds)('through the %s', (kind) => {",
    "  it('replays (from the middle)', async () => {});",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a template literal as a test file has it.
    '  it(`waits ${LIMIT} s`, async () => {});',
    '});',
  ].join('\n');

  it('finds literal names and names an .each title or a template renders; not others', () => {
    expect(namedIn(source, 'replays (from the middle)')).toBe(true);
    expect(namedIn(source, 'through the local server')).toBe(true);
    expect(namedIn(source, 'waits 12 s')).toBe(true);
    expect(namedIn(source, 'replays from the end')).toBe(false);
    expect(namedIn(source, 'through the')).toBe(false);
  });
});
