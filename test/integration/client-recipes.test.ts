import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { runCli } from '../support/cli';
import { itNeeding, pythonClients } from '../support/prerequisites';
import { recipesPython } from '../support/setup/python-environment';

/**
 * The client recipes of docs/clients.md, run as written against `npm start`: each recipe is a file in
 * examples/clients/ that the page shows verbatim, with the output it prints. A recipe that stops
 * working (an SDK renames its API, the gateway changes) fails here.
 *
 * The Python recipe needs the MCP Python SDK: the test set-up prepares `.venv-recipes` with it (or set
 * RECIPES_PYTHON); without it the test is skipped and the run says so (test/support/prerequisites.ts).
 */

jest.setTimeout(120_000);

const ROOT = join(__dirname, '../..');
const docs = readFileSync(join(ROOT, 'docs/clients.md'), 'utf8');
const run = promisify(execFile);
const python = recipesPython();

let gateway: ReturnType<typeof runCli>;
let url: string;

beforeAll(async () => {
  gateway = runCli(['--port', '0', '--demo-port', '0', '--demo-modern-port', '0']);
  url = (await gateway.ready())!;
});

afterAll(async () => {
  gateway.child.kill('SIGTERM');
  await gateway.exited;
});

/** The recipe file as the page must show it, and the output the page says it prints. */
function recipe(file: string, expectedOutput: string): string {
  const source = readFileSync(join(ROOT, 'examples/clients', file), 'utf8').trim();
  expect({ file, shownInDocs: docs.includes(source) }).toEqual({ file, shownInDocs: true });
  expect({ file, outputInDocs: docs.includes(expectedOutput.trim()) }).toEqual({ file, outputInDocs: true });
  return join(ROOT, 'examples/clients', file);
}

it('curl: a 2025-11-25 session, then a tool call', async () => {
  const expected = '{"result":{"content":[{"type":"text","text":"echo: hi"}]},"jsonrpc":"2.0","id":2}\n';
  const file = recipe('curl-session.sh', expected);
  const { stdout } = await run('bash', [file, url], { timeout: 30_000 });
  expect(stdout).toBe(expected);
});

it('TypeScript SDK: a tool call whose elicitation the code answers', async () => {
  const expected = 'Elicitation: Run `aws s3 ls`?\nResult: executed: aws s3 ls\n';
  const file = recipe('typescript-sdk-elicitation.mts', expected);
  const { stdout } = await run(process.execPath, ['--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, MCP_ENDPOINT: url },
    timeout: 60_000,
  });
  expect(stdout).toBe(expected);
});

itNeeding(pythonClients)('Python SDK 2.x: a tool call whose elicitation the code answers', async () => {
  const expected =
    'Elicitation: Run `aws s3 rm s3://my-bucket/important-file`?\nResult: executed: aws s3 rm s3://my-bucket/important-file\n';
  const file = recipe('python_sdk_elicitation.py', expected);
  expect({ python, exists: existsSync(python) }).toEqual({ python, exists: true });
  const { stdout } = await run(python, [file, url], { timeout: 60_000 });
  expect(stdout).toBe(expected);
});
