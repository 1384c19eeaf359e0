import type { LocalGateway } from './local-gateway';

/** Said once, with what the process is, rather than as a log line before it is ready. */
export const GENERATED_KEY_LINE =
  'requestState key: a random one for this process (set requestStateKeys in a --config file to share one across processes)';

/** What a person needs after start: where things are, and how to run a second process beside this one. */
export function readyLines(gateway: LocalGateway): string[] {
  const lines = [
    `MCP gateway ready: ${gateway.url}`,
    `  targets: ${gateway.config.targets.map((t) => `${t.name} → ${t.url}`).join(', ') || 'none'}`,
  ];
  const demos = gateway.demo?.running ?? [];
  for (const demo of demos) {
    if (demo.movedFrom !== undefined)
      lines.push(`  ${demo.name}: port ${demo.movedFrom} is in use, so it listens on ${new URL(demo.url).port}`);
  }
  const started = demos.filter((d) => d.startedHere);
  if (started.length) {
    lines.push(
      `  ${started.map((d) => `${d.name} (${d.era})`).join(' and ')} run in this process; their URL elicitations open a consent page on the target`,
    );
  }
  lines.push(
    `  DynamoDB: ${gateway.dynamodbEmbedded ? `embedded (${gateway.dynamodbEndpoint})` : gateway.dynamodbEndpoint}, table ${gateway.config.tableName}`,
  );
  if (gateway.requestStateKeyGenerated) lines.push(`  ${GENERATED_KEY_LINE}`);
  if (gateway.dynamodbEmbedded && demos.length === 2 && demos.every((d) => d.startedHere)) {
    const [demo, modern] = demos;
    lines.push(
      '  a second gateway process on the same DynamoDB and demo targets (like a second Lambda instance):',
      `    npm start -- --port ${Number(new URL(gateway.url).port) + 1} --dynamodb-endpoint ${gateway.dynamodbEndpoint} --demo-url ${demo?.url} --demo-modern-url ${modern?.url}`,
    );
  }
  if (demos.some((d) => d.name === 'demo')) {
    const port = new URL(gateway.url).port;
    const url = port === '8080' && new URL(gateway.url).hostname === '127.0.0.1' ? '' : ` -- --url ${gateway.url}`;
    lines.push(`  try it: npm run demo:client${url}   (a tool call whose elicitation you answer in the terminal)`);
  }
  lines.push('  Ctrl-C stops it; npm start -- --help lists the flags');
  return lines;
}
