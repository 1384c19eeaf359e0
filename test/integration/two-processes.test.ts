import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../support/cli';
import { clickOnConsentPage } from '../support/consent-page';
import { callAndAnswer, initSession } from '../support/mcp-http';

/**
 * The two-process recipe of docs/local.md ("Two gateway processes, one DynamoDB, one pair of demo targets"),
 * run as written except that its fixed ports become free ones (the machine is shared): a second
 * `npm start` on the first one's embedded DynamoDB and demo targets, and elicitations asked on calls
 * through the first process answered through the second.
 */

jest.setTimeout(90_000);

/** The `npm start -- …` commands of the recipe block in docs/local.md, as argument lists. */
function recipe(): string[][] {
  const readme = readFileSync(join(__dirname, '../../docs/local.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Two gateway processes'));
  const block = /```bash\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .filter((line) => line.startsWith('npm start -- '))
    .map((line) => line.slice('npm start -- '.length).split(/\s+/).filter(Boolean));
}

const processes: Array<ReturnType<typeof runCli>> = [];
afterAll(async () => {
  for (const cli of processes) cli.child.kill('SIGTERM');
  await Promise.all(processes.map((cli) => cli.exited));
});

it('two npm start processes share one DynamoDB and one pair of demo targets; an answer may reach either', async () => {
  const [first, second] = recipe();
  expect(first).toEqual(['--dynamodb-port', '8000']);
  expect(second).toEqual([
    '--port',
    '8081',
    '--dynamodb-endpoint',
    'http://127.0.0.1:8000',
    '--demo-url',
    'http://127.0.0.1:3001/mcp',
    '--demo-modern-url',
    'http://127.0.0.1:3002/mcp',
  ]);

  // Terminal 1, on free ports.
  const one = runCli([
    ...first!.map((arg) => (arg === '8000' ? '0' : arg)),
    '--port',
    '0',
    '--demo-port',
    '0',
    '--demo-modern-port',
    '0',
  ]);
  processes.push(one);
  const url1 = await one.ready();
  expect(url1).toBeDefined();
  const printed = one.output().stdout;
  const dynamodb = /DynamoDB: embedded \((http:\/\/127\.0\.0\.1:\d+)\)/.exec(printed)?.[1];
  const demo = /demo → (\S+),/.exec(printed)?.[1];
  const modern = /demo-modern → (\S+)/.exec(printed)?.[1];
  expect([dynamodb, demo, modern]).toEqual([expect.any(String), expect.any(String), expect.any(String)]);
  // It prints the second command with its own addresses: the recipe's flags.
  expect(printed).toContain(`--dynamodb-endpoint ${dynamodb} --demo-url ${demo} --demo-modern-url ${modern}`);

  // Terminal 2, the recipe's command with terminal 1's actual addresses.
  const actual: Record<string, string> = {
    '8081': '0',
    'http://127.0.0.1:8000': dynamodb!,
    'http://127.0.0.1:3001/mcp': demo!,
    'http://127.0.0.1:3002/mcp': modern!,
  };
  const two = runCli(second!.map((arg) => actual[arg] ?? arg));
  processes.push(two);
  const url2 = await two.ready();
  expect(url2).toBeDefined();
  expect(two.output().stdout).toContain(`targets: demo → ${demo}, demo-modern → ${modern}`);
  expect(two.output().stdout).toContain(`DynamoDB: ${dynamodb}, table mcp-gateway`);

  const capabilities = { elicitation: { form: {}, url: {} } };
  const { headers } = await initSession(url1!, { capabilities });
  const answerThroughTwo = { answerUrl: url2! };

  // Form elicitation of the 2025 demo target: asked through process 1, answered through process 2.
  const form = await callAndAnswer(
    url1!,
    headers,
    { id: 'form', params: { name: 'demo___use_aws', arguments: { command: 'aws s3 ls' } } },
    () => ({ result: { action: 'accept', content: { confirm: true } } }),
    answerThroughTwo,
  );
  expect(form.answerStatuses).toEqual([202]);
  expect(form.response.result.content[0].text).toBe('executed: aws s3 ls');

  // URL elicitation: the person allows it on the demo target's consent page, the answer goes through process 2.
  const url = await callAndAnswer(
    url1!,
    headers,
    { id: 'url', params: { name: 'demo___access_github_repo', arguments: { repo: 'o/r' } } },
    async (asked) => {
      expect(asked.params.url).toMatch(new RegExp(`^${new URL(demo!).origin}/consent/`));
      await clickOnConsentPage(asked.params.url, 'allow');
      return { result: { action: 'accept' } };
    },
    answerThroughTwo,
  );
  expect(url.messages.map((m) => m.method ?? 'response')).toEqual([
    'elicitation/create',
    'notifications/elicitation/complete',
    'response',
  ]);
  expect(url.response.result.content[0].text).toBe('accessed o/r');

  // The 2026-07-28 demo target's input round, relayed to this 2025 session, answered through process 2.
  const modernRound = await callAndAnswer(
    url1!,
    headers,
    { id: 'modern', params: { name: 'demo-modern___use_aws', arguments: { command: 'aws s3 ls' } } },
    () => ({ result: { action: 'accept', content: { confirm: true } } }),
    answerThroughTwo,
  );
  expect(modernRound.response.result.content[0].text).toBe('executed: aws s3 ls');
});
