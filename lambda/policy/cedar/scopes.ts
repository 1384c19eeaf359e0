import type { EntityUidJson, PolicyJson, PolicySet } from '@cedar-policy/cedar-wasm/nodejs';
import { cedar } from './engine';
import type { ToolEntityInput } from './entities';
import { ENTITY } from './schema';

/**
 * Which policies could apply to a request, read from their scopes (`principal == …`, `resource in
 * …`, `is …`): a policy whose scope cannot match the caller or the tool cannot change the decision,
 * so the engine is given only the others. With one policy per team and target (1,000 of them), a
 * decision reads the few that name its tool's target instead of all.
 *
 * Conditions (`when`, `unless`) are never read here: only the scope, which Cedar also checks first.
 */

type Uid = { type: string; id: string };
type Constraint = PolicyJson['principal'] | PolicyJson['resource'];

function uidOf(json: EntityUidJson): Uid {
  return '__entity' in json ? json.__entity : json;
}

const same = (a: Uid, b: Uid) => a.type === b.type && a.id === b.id;

/** Whether an entity in `candidates` (the entity itself and what it is in) satisfies the constraint. */
function couldMatch(constraint: Constraint, type: string, candidates: readonly Uid[]): boolean {
  switch (constraint.op) {
    case 'All':
      return true;
    case '==':
      return 'entity' in constraint ? same(uidOf(constraint.entity), candidates[0]!) : true;
    case 'in':
      return 'entity' in constraint ? candidates.some((c) => same(c, uidOf(constraint.entity))) : true;
    case 'is':
      if (constraint.entity_type !== type) return false;
      return constraint.in && 'entity' in constraint.in
        ? candidates.some((c) => same(c, uidOf((constraint.in as { entity: EntityUidJson }).entity)))
        : true;
  }
}

export class PolicyScopes {
  private readonly policies: Array<{ id: string; text: string; principal: Constraint; resource: Constraint }>;

  constructor(policySet: PolicySet) {
    const statics = policySet.staticPolicies as Record<string, string>;
    this.policies = Object.entries(statics).map(([id, text]) => {
      const json = cedar().policyToJson(text);
      if (json.type === 'failure') throw new Error(`policy ${id} did not load: ${json.errors.map((e) => e.message)}`);
      return { id, text, principal: json.json.principal, resource: json.json.resource };
    });
  }

  /** The ids of the policies whose scope could match this principal and tool, in their order. */
  relevant(principalUid: EntityUidJson, tool: ToolEntityInput): string[] {
    const principal = uidOf(principalUid);
    const toolUid = { type: ENTITY.tool, id: `${tool.target}___${tool.tool}` };
    const resources = [toolUid, { type: ENTITY.target, id: tool.target }];
    return this.policies
      .filter(
        (p) => couldMatch(p.principal, principal.type, [principal]) && couldMatch(p.resource, ENTITY.tool, resources),
      )
      .map((p) => p.id);
  }

  /** The policy set of these ids. */
  subset(ids: readonly string[]): PolicySet {
    const wanted = new Set(ids);
    return {
      staticPolicies: Object.fromEntries(this.policies.filter((p) => wanted.has(p.id)).map((p) => [p.id, p.text])),
    };
  }
}
