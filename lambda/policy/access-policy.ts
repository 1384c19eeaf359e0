import type { AuthorizationAnswer, CedarValueJson, PartialAuthorizationAnswer } from '@cedar-policy/cedar-wasm/nodejs';
import type { CallerIdentity } from '../auth/identity';
import { ConfigError, type PolicyConfig } from '../config/schema';
import type { GatewayLogger } from '../observability/logger';
import { recordPolicyDecision } from '../observability/metrics';
import type { Era } from '../protocol/versions';
import type { Clock } from '../scheduling/clock';
import { cedar } from './cedar/engine';
import { argumentsContext, principalEntity, type ToolEntityInput, toolEntities, toolUid } from './cedar/entities';
import { type CheckedPolicies, checkPolicies, describePolicyProblem } from './cedar/policies';
import { type ArgumentType, CALL_TOOL, ENTITY } from './cedar/schema';
import { PolicyScopes } from './cedar/scopes';

/**
 * Who may call which tool (Cedar policies, `policy` in the configuration), decided inside the
 * gateway. Cedar denies unless a policy permits and none forbids.
 *
 * - A call is decided with everything it carries: the caller, the tool in its target, the declared
 *   arguments, the era and the time.
 * - A list shows a tool when some call of it could be permitted: its arguments are unknown then
 *   (partial evaluation), so a listed tool may still be refused for what a call passes.
 * - `logOnly` decides and logs the same, and enforces nothing: a way to try policies on live traffic.
 *
 * A refusal tells the client which tool it may not call, never which policy said so; the log and
 * the metric say that.
 */
export type PolicyMode = PolicyConfig['mode'];

export interface AccessRequest {
  identity: CallerIdentity;
  era: Era;
  protocolVersion: string;
}

export interface AccessDecision {
  allowed: boolean;
  /** The policies that determined the decision (permits that allowed it, or forbids that denied it). */
  policies: readonly string[];
  /** Why no policy could be applied, when that decided (a declared argument of another type). */
  reason?: 'argument-type';
}

export interface AccessPolicy {
  readonly mode: PolicyMode | 'none';
  /** Whether the call may go to the target (in logOnly always true; the decision is logged). */
  mayCall(request: AccessRequest, tool: ToolEntityInput, args: Readonly<Record<string, unknown>>): boolean;
  /** Whether a list shows the tool to this caller. */
  mayList(request: AccessRequest, tool: ToolEntityInput): boolean;
}

/** No policy configured: everything the filters expose may be listed and called. */
export const OPEN_ACCESS: AccessPolicy = { mode: 'none', mayCall: () => true, mayList: () => true };

export interface CedarAccessSettings {
  mode: PolicyConfig['mode'];
  argumentTypes: Readonly<Record<string, ArgumentType>>;
}

/** Each policy set is parsed once into the engine (its id keys the engine's cache). */
let nextSetId = 0;
/** Distinct subsets kept parsed in the engine; past it they are parsed again as needed. */
const MAX_PARSED_SUBSETS = 256;

export class CedarAccessPolicy implements AccessPolicy {
  readonly mode: PolicyMode;
  private readonly setId = `gateway-policies-${nextSetId++}`;
  /** Which policies could apply to a request (by their scope): a decision reads only those. */
  private readonly scopes: PolicyScopes;
  /** Subsets of the policies parsed into the engine, by their ids (bounded). */
  private readonly parsedSubsets = new Map<string, string>();

  constructor(
    policies: Extract<CheckedPolicies, { ok: true }>,
    private readonly settings: CedarAccessSettings,
    private readonly clock: Clock,
    private readonly logger: GatewayLogger,
  ) {
    this.mode = settings.mode;
    this.scopes = new PolicyScopes(policies.policySet);
  }

  /** The policies whose scope could match this caller and tool, parsed once into the engine. */
  private preparsed(request: AccessRequest, tool: ToolEntityInput): string | undefined {
    const ids = this.scopes.relevant(principalEntity(request.identity).uid, tool);
    if (ids.length === 0) return undefined;
    const key = ids.join('\u0000');
    let setId = this.parsedSubsets.get(key);
    if (!setId) {
      if (this.parsedSubsets.size >= MAX_PARSED_SUBSETS) this.parsedSubsets.clear();
      setId = `${this.setId}-${this.parsedSubsets.size}`;
      const parsed = cedar().preparsePolicySet(setId, this.scopes.subset(ids));
      if (parsed.type === 'failure') throw new Error(`policies did not load: ${parsed.errors.map((e) => e.message)}`);
      this.parsedSubsets.set(key, setId);
    }
    return setId;
  }

  mayCall(request: AccessRequest, tool: ToolEntityInput, args: Readonly<Record<string, unknown>>): boolean {
    const decision = this.decideCall(request, tool, args);
    recordPolicyDecision(decision.allowed ? 'allow' : this.mode === 'enforce' ? 'deny' : 'wouldDeny');
    if (!decision.allowed) {
      this.logger.info(this.mode === 'enforce' ? 'call denied by policy' : 'call would be denied by policy (logOnly)', {
        target: tool.target,
        tool: tool.tool,
        policies: decision.policies,
        ...(decision.reason ? { reason: decision.reason } : {}),
      });
    } else {
      this.logger.debug('call allowed by policy', {
        target: tool.target,
        tool: tool.tool,
        policies: decision.policies,
      });
    }
    return decision.allowed || this.mode === 'logOnly';
  }

  mayList(request: AccessRequest, tool: ToolEntityInput): boolean {
    return this.mode === 'logOnly' || this.couldPermit(request, tool);
  }

  /** The decision on one call, enforced or not. */
  decideCall(request: AccessRequest, tool: ToolEntityInput, args: Readonly<Record<string, unknown>>): AccessDecision {
    const { value, mismatched } = argumentsContext(args, this.settings.argumentTypes);
    if (mismatched.length > 0) return { allowed: false, policies: [], reason: 'argument-type' };
    const setId = this.preparsed(request, tool);
    // No policy could apply: Cedar's default, deny.
    if (setId === undefined) return { allowed: false, policies: [] };
    const answer = cedar().statefulIsAuthorized({
      ...this.call(request, tool),
      context: this.context(request, value),
      preparsedPolicySetId: setId,
    });
    return decisionOf(answer);
  }

  private couldPermit(request: AccessRequest, tool: ToolEntityInput): boolean {
    const ids = this.scopes.relevant(principalEntity(request.identity).uid, tool);
    if (ids.length === 0) return false;
    const { entities, ...call } = this.call(request, tool);
    const answer: PartialAuthorizationAnswer = cedar().isAuthorizedPartial({
      ...call,
      entities,
      context: this.context(request, { __extn: { fn: 'unknown', arg: 'arguments' } }),
      policies: this.scopes.subset(ids),
    });
    if (answer.type === 'failure') {
      this.logger.warn('policy could not be evaluated for a list; the tool is left out', {
        target: tool.target,
        tool: tool.tool,
        errors: answer.errors.map((e) => e.message),
      });
      return false;
    }
    // null: it depends on the arguments; "allow": any call is permitted.
    return answer.response.decision !== 'deny';
  }

  private call(request: AccessRequest, tool: ToolEntityInput) {
    const principal = principalEntity(request.identity);
    return {
      principal: principal.uid,
      action: { type: ENTITY.action, id: CALL_TOOL },
      resource: toolUid(tool.target, tool.tool),
      entities: [principal, ...toolEntities(tool)],
    };
  }

  private context(request: AccessRequest, args: CedarValueJson): Record<string, CedarValueJson> {
    return {
      era: request.era,
      protocolVersion: request.protocolVersion,
      now: Math.floor(this.clock.now() / 1000),
      arguments: args,
    };
  }
}

function decisionOf(answer: AuthorizationAnswer): AccessDecision {
  // An engine failure (a malformed request) denies: closed, never open.
  if (answer.type === 'failure') return { allowed: false, policies: [] };
  return { allowed: answer.response.decision === 'allow', policies: answer.response.diagnostics.reason };
}

/**
 * The gateway's access policy from its configuration: open without `policy`; otherwise the policies,
 * checked as `--check-config` checks them. Policies that do not validate stop the start (a gateway
 * never runs with half its rules).
 */
export function accessPolicyOf(policy: PolicyConfig | undefined, clock: Clock, logger: GatewayLogger): AccessPolicy {
  if (!policy) return OPEN_ACCESS;
  const checked = checkPolicies(policy.policies, policy.argumentTypes);
  if (!checked.ok) {
    throw new ConfigError(`invalid policy.policies: ${checked.problems.map(describePolicyProblem).join('; ')}`);
  }
  for (const warning of checked.warnings) logger.warn('policy warning', { problem: describePolicyProblem(warning) });
  logger.info('policies loaded', { mode: policy.mode, policies: checked.ids.length });
  return new CedarAccessPolicy(checked, { mode: policy.mode, argumentTypes: policy.argumentTypes }, clock, logger);
}
