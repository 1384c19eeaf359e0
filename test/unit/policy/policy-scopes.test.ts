import { checkPolicies } from '../../../lambda/policy/cedar/policies';
import { PolicyScopes } from '../../../lambda/policy/cedar/scopes';

/**
 * Which policies a decision reads (lambda/policy/cedar/scopes.ts): those whose scope could match the
 * caller and the tool. Leaving out one that could apply would change a decision, so each kind of
 * scope is pinned both ways.
 */

const TEXT = `
@id("all") permit (principal, action, resource);
@id("bob-only") permit (principal == McpGateway::User::"bob", action, resource);
@id("iam-only") permit (principal is McpGateway::IamCaller, action, resource);
@id("payments") forbid (principal, action, resource in McpGateway::Target::"payments");
@id("refund") permit (principal, action, resource == McpGateway::Tool::"payments___refund");
@id("tools-of-mail") permit (principal, action, resource is McpGateway::Tool in McpGateway::Target::"mail");
@id("users-in-tool") permit (principal is McpGateway::User, action, resource in McpGateway::Tool::"mail___send");
`;

function scopes(): PolicyScopes {
  const checked = checkPolicies(TEXT, {});
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  return new PolicyScopes(checked.policySet);
}

const user = (id: string) => ({ type: 'McpGateway::User', id });

describe('the policies a decision reads', () => {
  it("a user's call of payments' refund reads the unscoped, its target's and its own tool's policies", () => {
    expect(scopes().relevant(user('alice'), { target: 'payments', tool: 'refund' })).toEqual([
      'all',
      'payments',
      'refund',
    ]);
  });

  it('a policy naming a principal applies to that principal only; one naming a type to that type', () => {
    const s = scopes();
    expect(s.relevant(user('bob'), { target: 'payments', tool: 'balance' })).toEqual(['all', 'bob-only', 'payments']);
    expect(
      s.relevant({ type: 'McpGateway::IamCaller', id: 'arn:aws:iam::1:role/r' }, { target: 'x', tool: 'y' }),
    ).toEqual(['all', 'iam-only']);
  });

  it('`is Tool in Target` and `in Tool` match the tools they name', () => {
    const s = scopes();
    expect(s.relevant(user('alice'), { target: 'mail', tool: 'send' })).toEqual([
      'all',
      'tools-of-mail',
      'users-in-tool',
    ]);
    expect(s.relevant(user('alice'), { target: 'mail', tool: 'read' })).toEqual(['all', 'tools-of-mail']);
  });

  it('a subset holds the texts of those ids, for the engine', () => {
    const subset = scopes().subset(['refund']);
    expect(Object.keys(subset.staticPolicies as object)).toEqual(['refund']);
  });
});
