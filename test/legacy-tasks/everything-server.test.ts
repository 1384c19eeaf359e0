import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema, RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayKind } from '../support/gateways';
import type { Json } from '../support/mcp-http';
import { startEverythingServer } from '../support/servers/everything-server';
import { withGateway } from '../support/with-gateway';

/**
 * 2025-11-25's experimental tasks against a server as others write it: the MCP project's "everything"
 * server (test/support/servers/everything-server.ts). Its `simulate-research-query`, called as a task
 * with an ambiguous topic, works in stages, turns `input_required` and asks the user through the task
 * (an elicitation tied to the task, queued for `tasks/result`), then completes. The official v1 client
 * (`client.experimental.tasks.callToolStream`) runs it directly and through the gateway: the same
 * messages, the same question and the same report, under the gateway's task id.
 */

jest.setTimeout(60_000);

const KINDS: GatewayKind[] = ['local server', 'lambda runtime'];
const CAPABILITIES = { tasks: { list: {}, cancel: {} }, elicitation: { form: {} } };

interface Run {
  messages: Json[];
  asked: Json[];
}

/** The research task, run to its end by the official v1 client, which picks the first interpretation offered. */
async function research(url: string, tool: string): Promise<Run> {
  const client = new Client({ name: 'everything-tasks', version: '1.0.0' }, { capabilities: CAPABILITIES });
  const asked: Json[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    const offered = (request.params as Json).requestedSchema.properties.interpretation.oneOf as Array<{
      const: string;
    }>;
    return { action: 'accept', content: { interpretation: offered[0]!.const } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  try {
    const messages: Json[] = [];
    for await (const message of client.experimental.tasks.callToolStream(
      { name: tool, arguments: { topic: 'python', ambiguous: true } },
      CallToolResultSchema,
      { task: { ttl: 60_000 } },
    )) {
      messages.push(message);
    }
    return { messages, asked };
  } finally {
    await client.close();
  }
}

const reportOf = (run: Run) => run.messages.at(-1)?.result?.content?.[0]?.text as string | undefined;
const taskIdOf = (run: Run) => run.messages.find((m) => m.type === 'taskCreated')?.task.taskId as string;

describe.each(KINDS)("the everything server's research task through the %s", (kind) => {
  const gw = withGateway((t) => ({ targets: [{ name: 'everything', url: t.everything.url }], logLevel: 'SILENT' }), {
    kind,
    targets: { everything: () => startEverythingServer() },
  });

  it('asks the user through the task and completes with the same report as directly, under the gateway’s task id', async () => {
    const [direct, through] = await Promise.all([
      research(gw.targets.everything.url, 'simulate-research-query'),
      research(gw.url, 'everything___simulate-research-query'),
    ]);
    expect(reportOf(direct)).toContain('# Research Report: python (programming)');
    expect(reportOf(through)).toBe(reportOf(direct));
    expect(through.messages.map((m) => m.type)).toEqual(expect.arrayContaining(['taskCreated', 'result']));
    expect(through.messages.at(-1)?.type).toBe('result');

    // The question, as the target asked it, tied to the task by the gateway's id (never the target's).
    const gatewayId = taskIdOf(through);
    expect(gatewayId).not.toBe(taskIdOf(direct));
    expect(through.asked).toHaveLength(1);
    const { _meta: directMeta, ...directQuestion } = direct.asked[0]!;
    const { _meta: throughMeta, ...throughQuestion } = through.asked[0]!;
    expect(throughQuestion).toEqual(directQuestion);
    expect(directMeta[RELATED_TASK_META_KEY]).toEqual({ taskId: taskIdOf(direct) });
    expect(throughMeta[RELATED_TASK_META_KEY]).toEqual({ taskId: gatewayId });
    for (const message of through.messages.filter((m) => m.task)) expect(message.task.taskId).toBe(gatewayId);
  });
});
