import type { CallerIdentity } from '../../../lambda/auth/identity';
import type { GatewayLogger } from '../../../lambda/observability/logger';
import { type AccessRequest, accessPolicyOf, OPEN_ACCESS } from '../../../lambda/policy/access-policy';
import type { ToolEntityInput } from '../../../lambda/policy/cedar/entities';
import { FakeClock } from '../../support/fake-clock';
import { FINANCE_POLICIES } from '../../support/finance-policies';

/**
 * Who may list and call which tool, as Cedar's engine decides it inside the gateway: the caller's
 * claims (attributes and tags), the tool in its target with its annotations, the declared arguments,
 * the era and the time; lists with the arguments unknown; enforce and logOnly.
 */

interface Line {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

function recordingLogger(lines: Line[]): GatewayLogger {
  const at =
    (level: string) =>
    (message: unknown, ...extra: unknown[]): void => {
      lines.push({ level, message: String(message), fields: (extra[0] ?? {}) as Record<string, unknown> });
    };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const FINANCE_EXAMPLE = `${FINANCE_POLICIES}
@id("no-destructive-tools-for-contractors")
forbid (principal is McpGateway::User, action, resource is McpGateway::Tool)
when { principal.hasTag("employee_type") && principal.getTag("employee_type") == "contractor"
       && resource has destructiveHint && resource.destructiveHint };
`;

function user(sub: string, claims: Record<string, unknown> = {}): CallerIdentity {
  return { kind: 'user', sub, issuer: 'https://idp.example.com', claims: { sub, ...claims } };
}

const as = (identity: CallerIdentity, era: AccessRequest['era'] = 'legacy'): AccessRequest => ({
  identity,
  era,
  protocolVersion: era === 'legacy' ? '2025-11-25' : '2026-07-28',
});

const REFUND: ToolEntityInput = { target: 'payments', tool: 'refund', annotations: { destructiveHint: true } };
const BALANCE: ToolEntityInput = { target: 'payments', tool: 'balance', annotations: { readOnlyHint: true } };

function policy(mode: 'enforce' | 'logOnly' = 'enforce', text = FINANCE_EXAMPLE) {
  const lines: Line[] = [];
  const access = accessPolicyOf(
    { mode, policies: text, argumentTypes: { amount: 'Long' } },
    new FakeClock(Date.UTC(2026, 11, 8)),
    recordingLogger(lines),
  );
  return { access, lines };
}

const alice = user('alice', { groups: ['finance', 'staff'] });
const bob = user('bob', { groups: ['engineering'] });

describe('the finance example', () => {
  it('the finance group calls refund within its limit; above it, or anyone else, is refused', () => {
    const { access } = policy();
    expect(access.mayCall(as(alice), REFUND, { amount: 120 })).toBe(true);
    expect(access.mayCall(as(alice), REFUND, { amount: 5000 })).toBe(false);
    expect(access.mayCall(as(alice), REFUND, {})).toBe(false);
    expect(access.mayCall(as(bob), REFUND, { amount: 120 })).toBe(false);
  });

  it('the same decisions in both eras', () => {
    const { access } = policy();
    expect(access.mayCall(as(alice, 'modern'), REFUND, { amount: 120 })).toBe(true);
    expect(access.mayCall(as(bob, 'modern'), REFUND, { amount: 120 })).toBe(false);
  });

  it('lists refund to the finance group only (some call of it could be permitted), and balance to every user', () => {
    const { access } = policy();
    expect(access.mayList(as(alice), REFUND)).toBe(true);
    expect(access.mayList(as(bob), REFUND)).toBe(false);
    expect(access.mayList(as(bob), BALANCE)).toBe(true);
  });

  it('callers without a JWT (IAM, anonymous) are permitted nothing here', () => {
    const { access } = policy();
    const iam: CallerIdentity = { kind: 'iam', arn: 'arn:aws:iam::123456789012:role/agent' };
    expect(access.mayCall(as(iam), BALANCE, {})).toBe(false);
    expect(access.mayList(as({ kind: 'anonymous' }), BALANCE)).toBe(false);
  });

  it('a forbid wins over a permit: a contractor in the finance group may not call a tool its target calls destructive', () => {
    const { access } = policy();
    const contractor = user('carol', { groups: ['finance'], employee_type: 'contractor' });
    expect(access.mayCall(as(contractor), REFUND, { amount: 10 })).toBe(false);
    expect(access.mayList(as(contractor), REFUND)).toBe(false);
  });
});

describe('what a decision reads', () => {
  it('a declared argument of another type is refused (no policy can reason about it), and logged without its value', () => {
    const { access, lines } = policy();
    expect(access.mayCall(as(alice), REFUND, { amount: '120' })).toBe(false);
    expect(access.mayCall(as(alice), REFUND, { amount: 1.5 })).toBe(false);
    const denial = lines.find((l) => l.message === 'call denied by policy');
    expect(denial?.fields).toEqual({ target: 'payments', tool: 'refund', policies: [], reason: 'argument-type' });
    expect(JSON.stringify(lines)).not.toContain('120');
  });

  it('arguments the configuration does not declare are not part of the decision', () => {
    const { access } = policy();
    expect(access.mayCall(as(alice), REFUND, { amount: 120, note: { anything: ['goes'] } })).toBe(true);
  });

  it('claims: a string list as groups, scope as a set, every scalar claim as a tag', () => {
    const { access } = policy(
      'enforce',
      `permit (principal is McpGateway::User, action, resource)
       when { principal.scopes.contains("tools:write") && principal.hasTag("tenant") && principal.getTag("tenant") == "acme"
              && principal.hasTag("email_verified") && principal.getTag("email_verified") == "true" };`,
    );
    const dave = user('dave', { scope: 'openid tools:write', tenant: 'acme', email_verified: true });
    expect(access.mayCall(as(dave), BALANCE, {})).toBe(true);
    expect(
      access.mayCall(as(user('erin', { scope: 'openid', tenant: 'acme', email_verified: true })), BALANCE, {}),
    ).toBe(false);
  });

  it("Cognito's group claim counts as groups", () => {
    const { access } = policy();
    expect(access.mayCall(as(user('frank', { 'cognito:groups': ['finance'] })), REFUND, { amount: 1 })).toBe(true);
  });

  it('a target with its tools, and the time, are in reach of a policy', () => {
    const { access } = policy(
      'enforce',
      `permit (principal, action, resource in McpGateway::Target::"payments") when { context.now >= 1796688000 && context.era == "modern" };`,
    );
    expect(access.mayCall(as({ kind: 'anonymous' }, 'modern'), BALANCE, {})).toBe(true);
    expect(access.mayCall(as({ kind: 'anonymous' }, 'legacy'), BALANCE, {})).toBe(false);
    expect(access.mayCall(as({ kind: 'anonymous' }, 'modern'), { target: 'mail', tool: 'send' }, {})).toBe(false);
  });
});

describe('modes', () => {
  it('enforce logs a denial with the deciding policies, never the arguments', () => {
    const { access, lines } = policy();
    const contractor = user('carol', { groups: ['finance'], employee_type: 'contractor' });
    access.mayCall(as(contractor), REFUND, { amount: 10 });
    expect(lines.filter((l) => l.level === 'info' && l.message === 'call denied by policy')).toEqual([
      {
        level: 'info',
        message: 'call denied by policy',
        fields: { target: 'payments', tool: 'refund', policies: ['no-destructive-tools-for-contractors'] },
      },
    ]);
  });

  it('logOnly decides and logs the same, and lets everything through', () => {
    const { access, lines } = policy('logOnly');
    expect(access.mayCall(as(bob), REFUND, { amount: 120 })).toBe(true);
    expect(access.mayList(as(bob), REFUND)).toBe(true);
    expect(lines.map((l) => l.message)).toContain('call would be denied by policy (logOnly)');
  });

  it('without policies everything is open', () => {
    expect(accessPolicyOf(undefined, new FakeClock(), recordingLogger([]))).toBe(OPEN_ACCESS);
  });

  it('invalid policies stop the start with where they are wrong', () => {
    expect(() => policy('enforce', 'permit(principal, action, resource) when { principal.nope };')).toThrow(
      /invalid policy\.policies: policy line 1, column \d+: .*nope/,
    );
  });
});
