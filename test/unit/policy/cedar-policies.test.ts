import { checkPolicies, describePolicyProblem } from '../../../lambda/policy/cedar/policies';

/**
 * The configured Cedar policies as `--check-config`, `cdk synth` and a starting gateway check them:
 * parsed and validated (strict) against the schema the configuration generates, each problem with
 * its line and column in the policy text and the policy's own id.
 */

const FINANCE = `@id("finance-refunds")
permit (
  principal is McpGateway::User,
  action == McpGateway::Action::"tools/call",
  resource == McpGateway::Tool::"payments___refund"
) when { principal.groups.contains("finance") && context.arguments has amount && context.arguments.amount <= 500 };
`;

describe('checking policies', () => {
  it('accepts the finance example against the schema, with the declared argument, and keys it by its id', () => {
    const checked = checkPolicies(FINANCE, { amount: 'Long' });
    expect(checked).toMatchObject({ ok: true, ids: ['finance-refunds'], warnings: [] });
  });

  it('a policy reading an argument the configuration does not declare can never apply: refused, at the policy', () => {
    const checked = checkPolicies(FINANCE, {});
    expect(checked.ok).toBe(false);
    const problems = checked.ok ? [] : checked.problems;
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatchObject({ severity: 'error', line: 1, column: 1 });
    expect(describePolicyProblem(problems[0]!)).toMatch(/^policy line 1, column 1: .*`finance-refunds`.*impossible/);
  });

  it('a syntax error is told at its line and column', () => {
    const checked = checkPolicies('permit(principal, action, resource)\nwhen { principal.sub == };', {});
    expect(checked.ok).toBe(false);
    expect(checked.ok ? [] : checked.problems).toEqual([
      expect.objectContaining({ severity: 'error', line: 2, column: 25 }),
    ]);
  });

  it('an attribute the schema does not have is an error (a typo never silently denies)', () => {
    const checked = checkPolicies(
      'permit(principal is McpGateway::User, action, resource) when { principal.group == "x" };',
      {},
    );
    expect(checked.ok).toBe(false);
    expect(checked.ok ? '' : checked.problems[0]?.message).toMatch(/attribute `group`/);
  });

  it('optional tool annotations must be tested with `has` first, as Cedar requires', () => {
    const unsafe = checkPolicies(
      'forbid(principal, action, resource is McpGateway::Tool) when { resource.destructiveHint };',
      {},
    );
    expect(unsafe.ok).toBe(false);
    const safe = checkPolicies(
      'forbid(principal, action, resource is McpGateway::Tool) when { resource has destructiveHint && resource.destructiveHint };',
      {},
    );
    expect(safe.ok).toBe(true);
  });

  it('two policies with one id are refused; policies without an id are named by position', () => {
    const twice = checkPolicies(
      '@id("a") permit(principal, action, resource);\n@id("a") forbid(principal, action, resource);',
      {},
    );
    expect(twice.ok ? [] : twice.problems.map((p) => p.message)).toEqual(['two policies have the id "a"']);
    const unnamed = checkPolicies('permit(principal, action, resource);\nforbid(principal, action, resource);', {});
    expect(unnamed).toMatchObject({ ok: true, ids: ['policy0', 'policy1'] });
  });

  it('templates are refused: every policy is static', () => {
    const checked = checkPolicies('permit(principal == ?principal, action, resource);', {});
    expect(checked.ok ? [] : checked.problems.map((p) => p.message)).toEqual([
      'templates are not supported: write static policies',
    ]);
  });
});
