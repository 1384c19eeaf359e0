import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The documents as a reader meets them: every link to a file of the repository and every `#anchor`
 * resolves (`npm run docs:check`, part of `npm run lint`, which CI runs), and what a recipe creates in the
 * checkout is ignored by git.
 */

const ROOT = join(__dirname, '../..');
const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };

/** `npm run docs:check` in `cwd`, as npm runs it (its binaries on the PATH); its output without colours. */
function docsCheck(cwd: string): { status: number | null; output: string } {
  const run = spawnSync('sh', ['-c', scripts['docs:check'] ?? 'false'], {
    cwd,
    env: { ...process.env, PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}` },
    encoding: 'utf8',
    timeout: 60_000,
  });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal's colour sequences start with ESC.
  return { status: run.status, output: (run.stdout + run.stderr).replace(/\u001b\[[0-9;]*m/g, '') };
}

test('npm run lint checks the links and anchors of the documents', () => {
  expect(scripts.lint).toContain('npm run docs:check');
});

test('every link and anchor of every Markdown file resolves', () => {
  expect(docsCheck(ROOT)).toEqual({ status: 0, output: '' });
});

describe('the link check on documents with broken links', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'docs-check-'));
    // The check's own configuration, and its plugin resolved from beside it, as in the repository. (A
    // capitalised folder, so that the repository's own check of named paths does not take these for ours.)
    copyFileSync(join(ROOT, '.remarkrc.json'), join(dir, '.remarkrc.json'));
    copyFileSync(join(ROOT, '.gitignore'), join(dir, '.gitignore'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    mkdirSync(join(dir, 'Notes'));
    writeFileSync(join(dir, 'Notes', 'guide.md'), '# Guide\n\n## Set up\n\nSee [the start](../README.md#start).\n');
    writeFileSync(
      join(dir, 'README.md'),
      [
        '# Project',
        '',
        '## Start',
        '',
        '- [a file that is not there](Notes/missing.md)',
        '- [a heading the other file lacks](Notes/guide.md#install)',
        '- [a heading this file lacks](#quick-start)',
        '- [fine](Notes/guide.md#set-up), [fine too](#start)',
        '',
        '| topic | where |',
        '| ----- | ----- |',
        '| usage | [in a table](Notes/usage.md) |',
        '',
      ].join('\n'),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('fails, naming each broken link and nothing else', () => {
    const { status, output } = docsCheck(dir);
    expect(status).not.toBe(0);
    const found = output.split('\n').filter((line) => /warning|error/.test(line));
    expect(found).toEqual([
      expect.stringMatching(/^5:3-.*Cannot find file `Notes\/missing\.md`/),
      expect.stringMatching(/^6:3-.*Cannot find heading for `#install` in `Notes\/guide\.md`/),
      expect.stringMatching(/^7:3-.*Cannot find heading for `#quick-start`/),
      expect.stringMatching(/^12:11-.*Cannot find file `Notes\/usage\.md`/),
      expect.stringMatching(/4 warnings/),
    ]);
  });
});

test("docs/deploy.md's tables are readable as raw Markdown: a phrase per cell, the details below them", () => {
  const longest = 100;
  const long = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8')
    .split('\n')
    .map((line, index) => ({ line: index + 1, cells: line.trim() }))
    .filter(({ cells }) => cells.startsWith('|') && !/^\|[\s|:-]+\|$/.test(cells))
    .flatMap(({ line, cells }) =>
      cells
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim())
        .filter((cell) => cell.length > longest)
        .map((cell) => `docs/deploy.md:${line}: ${cell.slice(0, 60)}… (${cell.length} characters)`),
    );
  expect(long).toEqual([]);
});

test('a virtual environment a recipe creates in the checkout is ignored by git', () => {
  // Relative paths only: one under /tmp or the home folder is not the checkout's.
  const tracked = execFileSync('git', ['ls-files', '*.md', '*.py', '*.sh'], { cwd: ROOT, encoding: 'utf8' });
  const venvs = new Set<string>();
  for (const file of tracked.split('\n').filter(Boolean)) {
    for (const [, path] of readFileSync(join(ROOT, file), 'utf8').matchAll(/python3? -m venv ([\w.][\w./-]*)/g))
      if (path) venvs.add(path);
  }
  expect([...venvs].sort()).toEqual(expect.arrayContaining(['.venv']));
  const notIgnored = [...venvs].filter(
    (path) => spawnSync('git', ['check-ignore', '-q', path], { cwd: ROOT }).status !== 0,
  );
  expect(notIgnored).toEqual([]);
});
