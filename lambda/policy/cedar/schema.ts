import type { SchemaJson, TypeOfAttribute } from '@cedar-policy/cedar-wasm/nodejs';
import type { POLICY_ARGUMENT_TYPES } from '../../config/schema';

/**
 * The Cedar schema policies are written against and validated with (at `--check-config`, at
 * `cdk synth` and when a gateway starts): generated from the configuration alone, so a policy is
 * checked before any target is reachable, and a target changing its tools never changes what a
 * policy means.
 *
 * - Principals: `User` (a verified JWT: `sub`, `issuer`, `groups`, `scopes`; every claim also as a
 *   String tag), `IamCaller` (`arn`), `Anonymous`.
 * - Resources: `Tool` (id `target___tool` whatever the prefix setting; `name`, `target`, and the
 *   annotations the target gives, which are the target's own claims) in its `Target` (id = the
 *   target's name).
 * - Action `tools/call`, with context `era` (`legacy`: 2025-11-25 and earlier; `modern`: 2026-07-28), `protocolVersion`, `now` (epoch
 *   seconds) and `arguments`: the arguments `policy.argumentTypes` declares, each optional.
 */
export const NAMESPACE = 'McpGateway';

export const ENTITY = {
  user: `${NAMESPACE}::User`,
  iamCaller: `${NAMESPACE}::IamCaller`,
  anonymous: `${NAMESPACE}::Anonymous`,
  target: `${NAMESPACE}::Target`,
  tool: `${NAMESPACE}::Tool`,
  action: `${NAMESPACE}::Action`,
} as const;

export const CALL_TOOL = 'tools/call';

export type ArgumentType = (typeof POLICY_ARGUMENT_TYPES)[number];

const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;
export type ToolHint = (typeof HINTS)[number];
export const TOOL_HINTS: readonly ToolHint[] = HINTS;

const STRING = { type: 'String' } as const;
const LONG = { type: 'Long' } as const;
const BOOL = { type: 'Boolean' } as const;
const STRING_SET = { type: 'Set', element: STRING } as const;

function argumentType(type: ArgumentType): TypeOfAttribute<string> {
  switch (type) {
    case 'String':
      return { ...STRING, required: false };
    case 'Long':
      return { ...LONG, required: false };
    case 'Bool':
      return { ...BOOL, required: false };
    case 'Set<String>':
      return { type: 'Set', element: STRING, required: false };
    case 'Set<Long>':
      return { type: 'Set', element: LONG, required: false };
  }
}

export function policySchema(argumentTypes: Readonly<Record<string, ArgumentType>>): SchemaJson<string> {
  const principals = ['User', 'IamCaller', 'Anonymous'];
  return {
    [NAMESPACE]: {
      entityTypes: {
        User: {
          shape: {
            type: 'Record',
            attributes: { sub: STRING, issuer: STRING, groups: STRING_SET, scopes: STRING_SET },
          },
          tags: STRING,
        },
        IamCaller: { shape: { type: 'Record', attributes: { arn: STRING } } },
        Anonymous: {},
        Target: { shape: { type: 'Record', attributes: { name: STRING } } },
        Tool: {
          memberOfTypes: ['Target'],
          shape: {
            type: 'Record',
            attributes: {
              name: STRING,
              target: STRING,
              ...Object.fromEntries(HINTS.map((hint) => [hint, { ...BOOL, required: false }])),
            },
          },
        },
      },
      actions: {
        [CALL_TOOL]: {
          appliesTo: {
            principalTypes: principals,
            resourceTypes: ['Tool'],
            context: {
              type: 'Record',
              attributes: {
                era: STRING,
                protocolVersion: STRING,
                now: LONG,
                arguments: {
                  type: 'Record',
                  attributes: Object.fromEntries(
                    Object.entries(argumentTypes).map(([name, type]) => [name, argumentType(type)]),
                  ),
                },
              },
            },
          },
        },
      },
    },
  };
}
