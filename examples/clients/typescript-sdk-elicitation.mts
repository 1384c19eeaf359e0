// A tool call through the gateway whose elicitation is answered in code (MCP TypeScript SDK 1.x).
//   npm i @modelcontextprotocol/sdk
//   MCP_ENDPOINT=http://127.0.0.1:8080/mcp npx tsx examples/clients/typescript-sdk-elicitation.mts
// Deployed with `auth` `jwt`, also set TOKEN (sent as `Authorization: Bearer …`).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const endpoint = new URL(process.env.MCP_ENDPOINT ?? 'http://127.0.0.1:8080/mcp');
const headers: Record<string, string> = process.env.TOKEN ? { Authorization: `Bearer ${process.env.TOKEN}` } : {};

const client = new Client({ name: 'my-agent', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  console.log(`Elicitation: ${request.params.message}`);
  return { action: 'accept', content: { confirm: true } };
});
await client.connect(new StreamableHTTPClientTransport(endpoint, { requestInit: { headers } }));
const result = await client.callTool({ name: 'demo___use_aws', arguments: { command: 'aws s3 ls' } });
console.log(`Result: ${(result.content as Array<{ text: string }>)[0]?.text}`);
await client.close();
