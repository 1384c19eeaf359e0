import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

/**
 * The repository stands alone: a file a comment or a document names exists here, and nothing points
 * to documents a reader of this repository does not have. A path is looked for from the repository's
 * root, from `lambda/` and `test/` (docs name modules by folder, as `state/items.ts`), and from
 * the naming file's own folder (relative links).
 */
const root = join(__dirname, '../..');
const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => /\.(ts|mts|mjs|cjs|md|sh)$/.test(file) || file === '.ci/run')
  .filter((file) => file !== 'CHANGELOG.md' && existsSync(join(root, file)));

// A relative path ending in a source or document extension, not part of a URL or a package name.
const PATH = /(?<![\w@/.:-])((?:\.{1,2}\/)*[a-z][\w.-]*\/[\w./-]*?[\w-]\.(?:ts|md|mjs|cjs|json|sh))(?![\w/])/g;
// Paths that are not files of this repository by design: build output, installed packages, examples of
// user paths in docs, and paths inside other repositories (named with their repository).
const NOT_OURS =
  /^(dist|cdk\.out|node_modules|bench\/results|results|coverage|tmp|src|path\/to|test\/path\/to|aws-lambda-ric|packages\/[^/]+\/dist)\//;

function exists(path: string, from: string): boolean {
  return [root, join(root, 'lambda'), join(root, 'test'), join(root, dirname(from))].some((base) =>
    existsSync(normalize(join(base, path))),
  );
}

test('every file a comment or document names exists in the repository', () => {
  const missing: string[] = [];
  for (const file of tracked) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const line of text.split('\n')) {
      // Another repository's file, named with its URL or its package: not ours to find.
      if (/https?:\/\/|github\.com|node_modules\/|@modelcontextprotocol\/|@aws-sdk\//.test(line)) continue;
      for (const [, path] of line.matchAll(PATH)) {
        if (path && !NOT_OURS.test(path.replace(/^(\.\.\/)+/, '')) && !exists(path, file))
          missing.push(`${file}: ${path}`);
      }
    }
  }
  expect(missing).toEqual([]);
});

// Every file name the repository has, for documents named without a path (`ARCHITECTURE.md`).
const names = new Set(
  execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .map((file) => file.split('/').pop()),
);
const BARE_DOCUMENT = /(?<![\w/.-])([A-Z][A-Z0-9_-]*\.md)\b/g;
// A relative path that climbs out of the naming file's folder.
const CLIMBING = /(?<![\w/.-])((?:\.\.\/)+)[\w-]/g;

test('nothing cites documents outside the repository, or the tracker', () => {
  const cites: string[] = [];
  for (const file of tracked) {
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .forEach((line, index) => {
        const at = `${file}:${index + 1}: ${line.trim().slice(0, 100)}`;
        // A document named by its file name alone is one of the repository's.
        for (const [, name] of line.matchAll(BARE_DOCUMENT)) if (!names.has(name)) cites.push(at);
        // A relative path stays inside the repository.
        for (const [, up] of line.matchAll(CLIMBING)) {
          const depth = up ? up.length / 3 : 0;
          if (
            depth >
            dirname(file)
              .split('/')
              .filter((part) => part !== '.').length
          )
            cites.push(at);
        }
        // Issue numbers mean nothing to a reader of the repository: the reason goes in place.
        if (/\bissue #?\d+|\(#\d+\)/i.test(line)) cites.push(at);
      });
  }
  expect(cites).toEqual([]);
});
