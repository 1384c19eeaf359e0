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

/**
 * `npm run demo:client`: the official TypeScript SDK client calling a tool through the gateway,
 * with the elicitation the target asks answered by you on the terminal. It declares form and URL
 * elicitation; a form's fields are asked one by one, a URL is printed for you to open.
 *
 *   npm run demo:client                                     # demo___use_aws on http://127.0.0.1:8080/mcp
 *   npm run demo:client -- --tool demo___access_github_repo --arguments '{"repo":"octo/hello"}'
 *   npm run demo:client -- --url https://…/mcp --header "Authorization: Bearer $TOKEN"
 */

const USAGE = 'usage: npm run demo:client -- [--url URL] [--tool NAME] [--arguments JSON] [--header "Name: value"]...';

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
  const label = `  ${field.title ?? name}${field.description ? ` — ${field.description}` : ''}`;
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
      const answer = await terminal.ask(`${label} (${choices.join(' | ')}): `);
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

/** Shows what the target asks and returns your answer. */
async function answer(terminal: Terminal, request: ElicitRequest): Promise<ElicitResult> {
  const params = request.params;
  console.log('');
  if (params.mode === 'url') {
    console.log(`the target asks (URL elicitation): ${params.message}`);
    console.log(`  open this page in a browser and decide there: ${params.url}`);
    const open = await terminal.ask('  will you open it? [y/n]: ');
    const action = open === undefined ? 'cancel' : /^y(es)?$/i.test(open.trim()) ? 'accept' : 'decline';
    console.log(`answered: ${action}`);
    if (action === 'accept') console.log('  (the tool waits for your decision on the page)');
    return { action };
  }
  console.log(`the target asks (form elicitation): ${params.message}`);
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

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: 'http://127.0.0.1:8080/mcp' },
      tool: { type: 'string', default: 'demo___use_aws' },
      arguments: { type: 'string', default: '{"command":"aws s3 ls"}' },
      header: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const toolArguments = JSON.parse(values.arguments) as Record<string, unknown>;
  const headers = Object.fromEntries(
    values.header.map((header) => {
      const colon = header.indexOf(':');
      if (colon < 1) throw new Error(`--header must be "Name: value", got ${JSON.stringify(header)}`);
      return [header.slice(0, colon).trim(), header.slice(colon + 1).trim()];
    }),
  );

  const terminal = new Terminal();
  const client = new Client(
    { name: 'mcp-gateway-demo-client', version: '1.0.0' },
    { capabilities: { elicitation: { form: {}, url: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, (request) => answer(terminal, request));
  const transport = new StreamableHTTPClientTransport(new URL(values.url), { requestInit: { headers } });
  try {
    await client.connect(transport);
    const server = client.getServerVersion();
    console.log(
      `connected to ${values.url} (${server?.name ?? 'server'} ${server?.version ?? ''}, MCP ${transport.protocolVersion})`,
    );
    console.log(`calling ${values.tool} ${JSON.stringify(toolArguments)}`);
    // Elicitations wait on a person: no request timeout short of the gateway's own.
    const result = await client.callTool({ name: values.tool, arguments: toolArguments }, undefined, {
      timeout: 15 * 60_000,
    });
    console.log('');
    const content = Array.isArray(result.content) ? result.content : [];
    const text = content.map((part) => (part.type === 'text' ? part.text : JSON.stringify(part))).join('\n');
    console.log(`result${result.isError ? ' (tool error)' : ''}: ${text}`);
  } finally {
    terminal.close();
    await client.close().catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? error.message : String(error);
  const hint = /ECONNREFUSED|fetch failed/.test(message) ? ' (is the gateway running? start it with npm start)' : '';
  console.error(`demo client: ${message}${hint}`);
  console.error(USAGE);
  process.exit(1);
});
