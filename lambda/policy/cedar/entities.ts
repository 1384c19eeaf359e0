import type { CedarValueJson, EntityJson, EntityUidJson } from '@cedar-policy/cedar-wasm/nodejs';
import type { CallerIdentity } from '../../auth/identity';
import { type ArgumentType, ENTITY, TOOL_HINTS } from './schema';

/**
 * What a decision reads, as Cedar entities and context: the caller (its claims as attributes and
 * tags), the tool in its target, and the call's arguments as the configuration declares them.
 */

export interface ToolEntityInput {
  target: string;
  /** The target's own name for the tool. */
  tool: string;
  /** The annotations the target lists (its claims; absent when the tool was not listed). */
  annotations?: Readonly<Record<string, unknown>>;
}

/** Claims holding group names, in the order looked for (Cognito names its own). */
const GROUP_CLAIMS = ['groups', 'cognito:groups'];
const SCOPE_CLAIMS = ['scope', 'scp'];

function strings(value: unknown, split: boolean): string[] {
  if (typeof value === 'string') return split ? value.split(' ').filter(Boolean) : [value];
  if (Array.isArray(value)) return value.filter((item): item is string => typeof item === 'string');
  return [];
}

/** A claim as a String tag: scalars as text, a list of scalars space-separated (as `scope` is); objects are left out. */
function tagOf(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((item) => ['string', 'number', 'boolean'].includes(typeof item)))
    return value.join(' ');
  return undefined;
}

export function principalEntity(identity: CallerIdentity): EntityJson {
  switch (identity.kind) {
    case 'user': {
      const { claims } = identity;
      const tags: Record<string, CedarValueJson> = {};
      for (const [name, value] of Object.entries(claims)) {
        const tag = tagOf(value);
        if (tag !== undefined) tags[name] = tag;
      }
      return {
        uid: { type: ENTITY.user, id: identity.sub },
        attrs: {
          sub: identity.sub,
          issuer: identity.issuer,
          groups: [...new Set(GROUP_CLAIMS.flatMap((claim) => strings(claims[claim], false)))],
          scopes: [...new Set(SCOPE_CLAIMS.flatMap((claim) => strings(claims[claim], true)))],
        },
        parents: [],
        tags,
      };
    }
    case 'iam':
      return { uid: { type: ENTITY.iamCaller, id: identity.arn }, attrs: { arn: identity.arn }, parents: [] };
    case 'anonymous':
      return { uid: { type: ENTITY.anonymous, id: 'anonymous' }, attrs: {}, parents: [] };
  }
}

export function toolUid(target: string, tool: string): EntityUidJson {
  return { type: ENTITY.tool, id: `${target}___${tool}` };
}

export function toolEntities({ target, tool, annotations }: ToolEntityInput): EntityJson[] {
  const hints: Record<string, CedarValueJson> = {};
  for (const hint of TOOL_HINTS) if (typeof annotations?.[hint] === 'boolean') hints[hint] = annotations[hint];
  return [
    {
      uid: toolUid(target, tool),
      attrs: { name: tool, target, ...hints },
      parents: [{ type: ENTITY.target, id: target }],
    },
    { uid: { type: ENTITY.target, id: target }, attrs: { name: target }, parents: [] },
  ];
}

const CONFORMS: Record<ArgumentType, (value: unknown) => boolean> = {
  String: (value) => typeof value === 'string',
  // Cedar's Long is 64-bit; JSON numbers beyond 2^53 are already imprecise, so they do not conform.
  Long: (value) => Number.isSafeInteger(value),
  Bool: (value) => typeof value === 'boolean',
  'Set<String>': (value) => Array.isArray(value) && value.every((item) => typeof item === 'string'),
  'Set<Long>': (value) => Array.isArray(value) && value.every((item) => Number.isSafeInteger(item)),
};

/**
 * The declared arguments of a call as the context's `arguments` record: each declared name the call
 * gives, if its value is of the declared type; undeclared names are left out. A declared argument of
 * another type is named in `mismatched` (the call is then refused: a policy cannot reason about it).
 */
export function argumentsContext(
  args: Readonly<Record<string, unknown>>,
  declared: Readonly<Record<string, ArgumentType>>,
): { value: Record<string, CedarValueJson>; mismatched: string[] } {
  const value: Record<string, CedarValueJson> = {};
  const mismatched: string[] = [];
  for (const [name, type] of Object.entries(declared)) {
    if (!Object.hasOwn(args, name) || args[name] === undefined) continue;
    if (CONFORMS[type](args[name])) value[name] = args[name] as CedarValueJson;
    else mismatched.push(name);
  }
  return { value, mismatched };
}
