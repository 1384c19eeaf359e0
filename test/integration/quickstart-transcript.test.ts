import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readmeTranscript, recordQuickstart, withTranscript } from '../../scripts/quickstart-transcript';

/**
 * The README's quickstart transcript is what a real `npm start` and `npm run demo:client` print
 * (scripts/quickstart-transcript.ts runs them and rewrites the README's two blocks).
 */

jest.setTimeout(120_000);

const README = join(__dirname, '../../README.md');

it("the README's quickstart shows what a real npm start and npm run demo:client print", async () => {
  const readme = readFileSync(README, 'utf8');
  const real = await recordQuickstart();
  expect(real.ready[0]).toBe('MCP gateway ready: http://127.0.0.1:8080/mcp');
  expect(real.demo.at(-1)).toBe('result: executed: aws s3 ls');
  // A difference here: run `npx tsx scripts/quickstart-transcript.ts` and commit the README it writes.
  expect(readmeTranscript(readme)).toEqual(real);
});

it('rewriting the README changes only the two blocks, and rewriting it again changes nothing', () => {
  const readme = readFileSync(README, 'utf8');
  const changed = withTranscript(readme, { ready: ['MCP gateway ready: x', '  y'], demo: ['connected to z', '', 'w'] });
  expect(readmeTranscript(changed)).toEqual({
    ready: ['MCP gateway ready: x', '  y'],
    demo: ['connected to z', '', 'w'],
  });
  expect(withTranscript(changed, readmeTranscript(readme))).toBe(readme);
});
