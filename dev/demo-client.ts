import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  type PrimitiveSchemaDefinition,
} from '@modelcontextprotocol/sdk/types.js';
import { printable } from './demo-client/printable';
import { type LinkDisplay, linkLines, supportsHyperlinks } from './demo-client/terminal-links';
import {
  chooseTool,
  DEFAULT_ARGUMENTS,
  defaultArgumentsFor,
  listAllTools,
  toolLines,
  UsageError,
} from './demo-client/tools';
import { whoAsks } from './demo-client/who-asks';

/**
 * `npm run demo:client`: the official TypeScript SDK client calling a tool through the gateway, with
 * the questions asked on the way — by the target, or by the gateway itself (a confirmation, the connect
 * question of a per-user OAuth target) — answered by you on the terminal. It declares form and URL
 * elicitation; a form's fields are asked one by one, a URL is printed for you to open.
 *
 *   npm run demo:client                                     # demo___use_aws on http://127.0.0.1:8080/mcp
 *   npm run demo:client -- --list                           # the gateway's tools
 *   npm run demo:client -- --tool demo___access_github_repo --arguments '{"repo":"octo/hello"}'
 *   npm run demo:client -- --url https://…/mcp --header "Authorization: Bearer $TOKEN"
 */

const DEFAULT_URL = 'http://127.0.0.1:8080/mcp';
const DEFAULT_TOOL = 'demo___use_aws';

/** Exit statuses (also in --help). */
const FAILED = 1;
const BAD_COMMAND_LINE = 2;

const FLAGS = [
  ['--url URL', `the gateway's MCP endpoint (default ${DEFAULT_URL})`],
  ['--tool NAME', `the tool to call (default ${DEFAULT_TOOL}); --list shows the names`],
  [
    '--arguments JSON',
    `its arguments, a JSON object (default ${JSON.stringify(DEFAULT_ARGUMENTS)} where it takes them)`,
  ],
  ['--header "Name: value"', 'a request header, e.g. "Authorization: Bearer $TOKEN" (repeatable)'],
  ['--list', "list the gateway's tools and exit"],
  ['--full-links', 'print a long link whole, not as a short terminal hyperlink'],
  ['-h, --help', "print this help, with the gateway's tools when one answers at --url"],
] as const;

function usage(): string {
  const width = Math.max(...FLAGS.map(([flag]) => flag.length));
  return [
    'usage: npm run demo:client -- [flags]',
    '',
    'An official-SDK MCP client that calls one tool through the gateway. What is asked on the way (by the',
    'target, or by the gateway itself: a confirmation, connecting an account) you answer in the terminal.',
    '',
    ...FLAGS.map(([flag, meaning]) => `  ${flag.padEnd(width)}  ${meaning}`),
    '',
    'Exit status: 0 when the tool answered (also with a tool error), 1 when the call failed, 2 for a bad',
    'command line (an unknown flag or tool, --arguments that are not a JSON object): nothing is called then.',
  ].join('\n');
}

/** Lines typed on the terminal (or piped in), handed out one per question. */
class Terminal {
  private readonly lines: string[] = [];
  private readonly waiting: Array<(line: string | undefined) => void> = [];
  private closed = false;
  private readonly rl = createInterface({ input: process.stdin, terminal: false });

  constructor() {
    this.rl.on('line', (line) => {
      const next = this.waiting.shift();
      if (next) next(line);
      else this.lines.push(line);
    });
    this.rl.on('close', () => {
      this.closed = true;
      for (const next of this.waiting.splice(0)) next(undefined);
    });
  }

  /** The next line, or undefined when input ended (Ctrl-D): the elicitation is then cancelled. */
  async ask(prompt: string): Promise<string | undefined> {
    process.stdout.write(prompt);
    const line =
      this.lines.shift() ??
      (this.closed ? undefined : await new Promise<string | undefined>((resolve) => this.waiting.push(resolve)));
    // A terminal echoes what is typed; piped answers are shown so that the transcript reads the same.
    if (!process.stdin.isTTY) process.stdout.write(line === undefined ? '\n' : `${line}\n`);
    return line;
  }

  close(): void {
    this.rl.close();
  }
}

type Field = PrimitiveSchemaDefinition;

async function askField(terminal: Terminal, name: string, field: Field): Promise<unknown | undefined> {
  const label = printable(`  ${field.title ?? name}${field.description ? ` — ${field.description}` : ''}`);
  for (;;) {
    if (field.type === 'boolean') {
      const answer = await terminal.ask(`${label} [y/n]: `);
      if (answer === undefined) return undefined;
      if (/^y(es)?$/i.test(answer.trim())) return true;
      if (/^no?$/i.test(answer.trim())) return false;
    } else if (field.type === 'number' || field.type === 'integer') {
      const answer = await terminal.ask(`${label} (${field.type}): `);
      if (answer === undefined) return undefined;
      const value = Number(answer.trim());
      if (answer.trim() && Number.isFinite(value) && (field.type === 'number' || Number.isInteger(value))) return value;
    } else if ('enum' in field && Array.isArray(field.enum)) {
      const choices = field.enum as string[];
      const answer = await terminal.ask(`${label} (${printable(choices.join(' | '))}): `);
      if (answer === undefined) return undefined;
      if (choices.includes(answer.trim())) return answer.trim();
    } else {
      const answer = await terminal.ask(`${label}: `);
      if (answer === undefined) return undefined;
      return answer;
    }
    console.log('  (not understood; try again)');
  }
}

/** Shows what is asked, and by whom, and returns your answer. */
async function answer(
  terminal: Terminal,
  request: ElicitRequest,
  requestId: string | number,
  display: LinkDisplay,
): Promise<ElicitResult> {
  const params = request.params;
  const asker = whoAsks(requestId, params) === 'gateway' ? 'the gateway' : 'the target';
  console.log('');
  if (params.mode === 'url') {
    console.log(`${asker} asks (URL elicitation): ${printable(params.message)}`);
    const lead = '  open this page in a browser and decide there: ';
    const url = httpUrl(params.url);
    // Anything but an http(s) URL is shown as text, never as a link.
    for (const line of url ? linkLines(lead, url, display) : [`${lead}${printable(params.url)}`]) console.log(line);
    const open = await terminal.ask('  will you open it? [y/n]: ');
    const action = open === undefined ? 'cancel' : /^y(es)?$/i.test(open.trim()) ? 'accept' : 'decline';
    console.log(`answered: ${action}`);
    if (action === 'accept') console.log('  (the tool waits for your decision on the page)');
    return { action };
  }
  console.log(`${asker} asks (form elicitation): ${printable(params.message)}`);
  const content: Record<string, string | number | boolean | string[]> = {};
  for (const [name, field] of Object.entries(params.requestedSchema.properties)) {
    const value = await askField(terminal, name, field as Field);
    if (value === undefined) {
      console.log('answered: cancel');
      return { action: 'cancel' };
    }
    content[name] = value as string | number | boolean;
  }
  console.log(`answered: accept ${JSON.stringify(content)}`);
  return { action: 'accept', content };
}

function httpUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

interface Options {
  url: string;
  tool: string;
  /** Undefined: the tool's defaults (defaultArgumentsFor). */
  toolArguments?: Record<string, unknown>;
  headers: Record<string, string>;
  list: boolean;
  help: boolean;
  fullLinks: boolean;
}

function parseOptions(argv: string[]): Options {
  let values: ReturnType<typeof parse>['values'];
  try {
    values = parse(argv).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  let toolArguments: Record<string, unknown> | undefined;
  if (values.arguments !== undefined) {
    try {
      toolArguments = JSON.parse(values.arguments) as Record<string, unknown>;
    } catch {
      throw new UsageError(`--arguments must be a JSON object, got ${JSON.stringify(values.arguments)}`);
    }
    if (typeof toolArguments !== 'object' || toolArguments === null || Array.isArray(toolArguments))
      throw new UsageError(`--arguments must be a JSON object, got ${JSON.stringify(values.arguments)}`);
  }
  const headers = Object.fromEntries(
    values.header.map((header) => {
      const colon = header.indexOf(':');
      if (colon < 1) throw new UsageError(`--header must be "Name: value", got ${JSON.stringify(header)}`);
      return [header.slice(0, colon).trim(), header.slice(colon + 1).trim()];
    }),
  );
  return {
    url: values.url,
    tool: values.tool,
    toolArguments,
    headers,
    list: values.list ?? false,
    help: values.help ?? false,
    fullLinks: values['full-links'] ?? false,
  };
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      url: { type: 'string', default: DEFAULT_URL },
      tool: { type: 'string', default: DEFAULT_TOOL },
      arguments: { type: 'string' },
      header: { type: 'string', multiple: true, default: [] },
      list: { type: 'boolean' },
      'full-links': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
}

function newClient(): Client {
  return new Client(
    { name: 'mcp-gateway-demo-client', version: '1.0.0' },
    { capabilities: { elicitation: { form: {}, url: {} } } },
  );
}

function transportFor(options: Options): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(options.url), { requestInit: { headers: options.headers } });
}

/** `--help`: the flags, then the tools of the gateway at --url if one answers soon. */
async function help(options: Options): Promise<void> {
  console.log(usage());
  console.log('');
  const client = newClient();
  try {
    // Help must not hang on an address that never answers.
    await client.connect(transportFor(options), { timeout: 5000 });
    const tools = await listAllTools(client, { timeout: 5000 });
    console.log(`tools at ${options.url}:`);
    for (const line of toolLines(tools)) console.log(line);
  } catch (error) {
    console.log(`tools: none listed, no gateway answered at ${options.url} (${(error as Error).message})`);
    console.log('  start one with npm start, or name it with --url');
  } finally {
    await client.close().catch(() => undefined);
  }
}

async function main(options: Options): Promise<void> {
  if (options.help) return help(options);
  const client = newClient();
  const transport = transportFor(options);
  let terminal: Terminal | undefined;
  try {
    await client.connect(transport);
    const tools = await listAllTools(client);
    if (options.list) {
      console.log(`tools at ${options.url}:`);
      for (const line of toolLines(tools)) console.log(line);
      return;
    }
    const tool = chooseTool(tools, options.tool, options.url);
    const toolArguments = options.toolArguments ?? (tool === 'unlisted' ? {} : defaultArgumentsFor(tool));
    const display: LinkDisplay = {
      hyperlinks: !options.fullLinks && supportsHyperlinks(process.stdout),
      columns: process.stdout.columns || Number(process.env.COLUMNS) || 80,
    };
    const asking = new Terminal();
    terminal = asking;
    client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
      answer(asking, request, extra.requestId, display),
    );
    const server = client.getServerVersion();
    console.log(
      `connected to ${options.url} (${server?.name ?? 'server'} ${server?.version ?? ''}, MCP ${transport.protocolVersion})`,
    );
    if (tool === 'unlisted') {
      console.log(
        `${options.tool} is not listed yet: its target lists its tools once you have connected your account there`,
      );
    }
    console.log(`calling ${options.tool} ${JSON.stringify(toolArguments)}`);
    // Elicitations wait on a person: no request timeout short of the gateway's own.
    const result = await client.callTool({ name: options.tool, arguments: toolArguments }, undefined, {
      timeout: 15 * 60_000,
    });
    console.log('');
    const content = Array.isArray(result.content) ? result.content : [];
    const text = content.map((part) => (part.type === 'text' ? part.text : JSON.stringify(part))).join('\n');
    console.log(`result${result.isError ? ' (tool error)' : ''}: ${printable(text)}`);
  } finally {
    terminal?.close();
    await client.close().catch(() => undefined);
  }
}

function run(): void {
  let options: Options;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`demo client: ${(error as Error).message}; npm run demo:client -- --help lists the flags`);
    process.exit(BAD_COMMAND_LINE);
  }
  main(options).catch((error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`demo client: ${error.message}`);
      process.exit(BAD_COMMAND_LINE);
    }
    const message = error instanceof Error ? error.message : String(error);
    const hint = /ECONNREFUSED|fetch failed/.test(message) ? ' (is the gateway running? start it with npm start)' : '';
    console.error(`demo client: ${printable(message)}${hint}`);
    process.exit(FAILED);
  });
}

run();
