import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

/** docs/deploy.md documents every prop of the McpGateway construct, read from its TypeScript declaration. */

const ROOT = join(__dirname, '..', '..');

function propsOf(interfaceName: string): string[] {
  const file = join(ROOT, 'lib/mcp-gateway.ts');
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const names: string[] = [];
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === interfaceName) {
      for (const member of node.members) if (member.name && ts.isIdentifier(member.name)) names.push(member.name.text);
    }
  });
  return names;
}

test('docs/deploy.md has a row for every McpGatewayProps property', () => {
  const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
  const props = propsOf('McpGatewayProps');
  expect(props.length).toBeGreaterThan(10);
  expect(props.filter((prop) => !docs.includes(`| \`${prop}\``))).toEqual([]);
});
