import type { CallerIdentity } from '../lambda/auth/identity';
import { createLogger } from '../lambda/observability/logger';
import { type AccessPolicy, type AccessRequest, accessPolicyOf } from '../lambda/policy/access-policy';
import type { ToolEntityInput } from '../lambda/policy/cedar/entities';
import { systemClock } from '../lambda/scheduling/clock';
import { type Distribution, distribution } from './stats';

/**
 * What deciding with policies costs, in the gateway's own process (`lambda/policy/access-policy.ts`,
 * Cedar's engine in WebAssembly): per call (`mayCall`, the arguments known) and per listed tool
 * (`mayList`, partial evaluation), with 1 policy and with 1,000 (one per target-and-group pair, as an
 * operator with many teams would write them). Microseconds; the engine's first load apart.
 */

export interface PolicyCost {
  engineLoadMs: number;
  /** By policy count: per call and per listed tool, in microseconds. */
  byPolicies: Record<string, { call: Distribution; list: Distribution }>;
}

const CALLS = 2000;
const WARMUP = 200;

function policiesOf(count: number): string {
  const first = `@id("finance") permit (principal is McpGateway::User, action == McpGateway::Action::"tools/call", resource == McpGateway::Tool::"payments___refund")
when { principal.groups.contains("finance") && context.arguments has amount && context.arguments.amount <= 500 };`;
  const others = Array.from(
    { length: count - 1 },
    (_, i) =>
      `@id("team-${i}") permit (principal is McpGateway::User, action, resource in McpGateway::Target::"target-${i}") when { principal.groups.contains("team-${i}") };`,
  );
  return [first, ...others].join('\n');
}

function microseconds(work: () => void): number[] {
  for (let i = 0; i < WARMUP; i++) work();
  const samples: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const start = process.hrtime.bigint();
    work();
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  return samples;
}

export function policyCost(): PolicyCost {
  const logger = createLogger('SILENT');
  const load = process.hrtime.bigint();
  const make = (count: number): AccessPolicy =>
    accessPolicyOf(
      { mode: 'enforce', policies: policiesOf(count), argumentTypes: { amount: 'Long' } },
      systemClock,
      logger,
    );
  make(1);
  const engineLoadMs = Math.round(Number(process.hrtime.bigint() - load) / 1e5) / 10;
  const identity: CallerIdentity = {
    kind: 'user',
    sub: 'alice',
    issuer: 'https://idp.example.com',
    claims: { sub: 'alice', groups: ['finance', 'team-7'], scope: 'openid mcp:tools', email: 'alice@example.com' },
  };
  const request: AccessRequest = { identity, era: 'modern', protocolVersion: '2026-07-28' };
  const tool: ToolEntityInput = { target: 'payments', tool: 'refund', annotations: { destructiveHint: true } };
  const byPolicies: PolicyCost['byPolicies'] = {};
  for (const count of [1, 1000]) {
    const access = make(count);
    byPolicies[count] = {
      call: distribution(microseconds(() => access.mayCall(request, tool, { amount: 120 }))),
      list: distribution(microseconds(() => access.mayList(request, tool))),
    };
  }
  return { engineLoadMs, byPolicies };
}
