import type { Item } from './items';
import { CLAIM_LEASE_MS } from './records';
import type { PendingStatus } from './store';

/**
 * The pending record's state machine (store.ts, PendingStatus), stated once as data: each transition
 * says from which statuses it may start, which guards must hold, and what it sets and removes. The
 * DynamoDB store turns a transition into one conditional UpdateItem (`dynamoUpdateOf`); the tests'
 * in-memory store evaluates the same transition against its item (`transitionHolds`, `applyTransition`).
 * The two interpreters below know a handful of operators, so a transition cannot mean one thing to
 * DynamoDB and another to the memory store (test/state/pending-transitions.test.ts runs both on a
 * grid of records and compares).
 *
 * Time is an input like any other (`now`, epoch seconds; `nowMs`, epoch milliseconds), passed by the
 * store's methods: nothing here reads the clock.
 */

/** What a transition is given: the time, and the values it compares or writes. */
export interface TransitionInputs {
  /** Epoch seconds: compared with `expiresAt` (and `sessionExpiresAt`). */
  now: number;
  /** Epoch milliseconds: compared with the leases (`holderUntil`, `claimedAt`), and a claim's time. */
  nowMs: number;
  /** A delivery claim: the new one (claim), or the one the caller holds (settle, release, ack). */
  token?: string;
  /** The client's answer as JSON (answer, record). */
  answer?: string;
  /** The holder's new lease, epoch ms (renewHolder). */
  until?: number;
  /** The principal of the request that answers (recordForPrincipal, answerForPrincipal). */
  principal?: string;
}

/** The inputs by name, and one derived from them: a claim taken before `staleBefore` has lapsed. */
type InputName = keyof TransitionInputs | 'staleBefore';

/** A value compared with an attribute, or written to one: an input, or a constant. */
type Operand = { input: InputName } | { constant: string };

/**
 * A condition on the record, as DynamoDB evaluates one: a comparison with a missing attribute, or
 * between values of different types, is false; `absent` is true of an attribute the item lacks;
 * `exists` is true when there is an item at all. A missing item is an item without attributes.
 */
export type Condition =
  | { op: '=' | '<' | '>'; attribute: string; than: Operand }
  | { op: 'absent'; attribute: string }
  | { op: 'exists' }
  | { op: 'and' | 'or'; of: Condition[] };

const input = (name: InputName): Operand => ({ input: name });
const constant = (value: string): Operand => ({ constant: value });
const compare = (name: string, op: '=' | '<' | '>', than: Operand): Condition => ({ op, attribute: name, than });
const or = (...of: Condition[]): Condition => ({ op: 'or', of });
const and = (...of: Condition[]): Condition => ({ op: 'and', of });
const statusIs = (status: PendingStatus): Condition => compare('status', '=', constant(status));

/** The guards a transition may name besides its statuses. */
export const GUARDS = {
  /** The record has not expired (its TTL attribute, epoch seconds; DynamoDB deletes expired items lazily). */
  notExpired: compare('expiresAt', '>', input('now')),
  /** No holder lease (nobody holds the call: any instance delivers), or a live one. */
  holderLiveOrAbsent: or({ op: 'absent', attribute: 'holderUntil' }, compare('holderUntil', '>', input('nowMs'))),
  /** A live holder lease: the holder is there to deliver a recorded answer. */
  holderLive: compare('holderUntil', '>', input('nowMs')),
  /** The delivery claim is the caller's own. */
  claimMatches: compare('claim', '=', input('token')),
  /** The delivery claim is older than the lease (its instance died mid-delivery): it may be taken over. */
  claimLapsed: compare('claimedAt', '<', input('staleBefore')),
  /** A relayed request (the target's), not the gateway's own question. */
  relayed: compare('kind', '=', constant('relayed')),
  /** The gateway's own question. */
  question: compare('kind', '=', constant('question')),
  /** The record carries the principal of its session, and it is the caller's (records without one never match). */
  principalMatches: compare('principal', '=', input('principal')),
  /** The record carries its session's expiry, not yet passed (records without one never match). */
  sessionLive: compare('sessionExpiresAt', '>', input('now')),
} satisfies Record<string, Condition>;

export type GuardName = keyof typeof GUARDS;

/** A status a transition starts from, alone or with a guard of its own (`delivering` with a lapsed claim). */
type From = PendingStatus | { status: PendingStatus; if: GuardName };

export interface Transition {
  /** The statuses it starts from (any of them); `any`: whatever the status, as long as the record exists. */
  from: readonly From[] | 'any';
  /** Guards that must all hold besides. */
  guards?: readonly GuardName[];
  /** Attributes written: a constant, or an input. */
  set?: Readonly<Record<string, Operand>>;
  /** Attributes removed. */
  remove?: readonly string[];
  /**
   * A refusal returns the record as it found it (DynamoDB: `ReturnValuesOnConditionCheckFailure:
   * ALL_OLD`), so the caller learns why without reading it again (store.ts, PendingWriteOutcome).
   */
  returnsRefused?: boolean;
}

/** The claim's own bookkeeping, dropped when a delivery ends either way. */
const CLAIM_ATTRIBUTES = ['claim', 'claimedAt', 'ack'] as const;
/** Pending, or a delivery whose instance died mid-way (its claim older than the lease). */
const PENDING_OR_LAPSED: readonly From[] = ['pending', { status: 'delivering', if: 'claimLapsed' }];

/** Every transition of a pending record (store.ts, PendingStore, says when each is used). */
export const PENDING_TRANSITIONS = {
  /**
   * pending (or a lapsed delivery) → delivering, with the claimant's token; never after expiry, never
   * when the holder's lease ran out (nobody would receive what the target does next).
   */
  claim: {
    from: PENDING_OR_LAPSED,
    guards: ['notExpired', 'holderLiveOrAbsent'],
    set: { status: constant('delivering'), claim: input('token'), claimedAt: input('nowMs') },
  },
  /** delivering → answered: the target took the answer (only by the claim's owner). */
  settle: {
    from: ['delivering'],
    guards: ['claimMatches'],
    set: { status: constant('answered') },
    remove: CLAIM_ATTRIBUTES,
  },
  /** delivering → pending: the delivery provably failed, so the client may send the answer again. */
  release: {
    from: ['delivering'],
    guards: ['claimMatches'],
    set: { status: constant('pending') },
    remove: CLAIM_ATTRIBUTES,
  },
  /** The holder saw the claim and is alive: `ack` set to the claim's token. */
  ack: { from: ['delivering'], guards: ['claimMatches'], set: { ack: input('token') } },
  /** The holder stops waiting: pending (or a lapsed delivery) → expired, whatever the time. */
  expire: { from: PENDING_OR_LAPSED, set: { status: constant('expired') }, returnsRefused: true },
  /** A gateway question's answer: pending → answered, with the answer, once. */
  answer: {
    from: ['pending'],
    guards: ['notExpired', 'holderLiveOrAbsent'],
    set: { status: constant('answered'), answer: input('answer') },
    returnsRefused: true,
  },
  /** A relayed request's answer kept for its live holder, which delivers it: pending → recorded, once. */
  record: {
    from: ['pending'],
    guards: ['notExpired', 'holderLive'],
    set: { status: constant('recorded'), answer: input('answer') },
  },
  /**
   * `record`, for an answer POST that has not read its session: only a relayed request's record that
   * carries its session's principal — the caller's — and its session's expiry, not yet passed.
   */
  recordForPrincipal: {
    from: ['pending'],
    guards: ['notExpired', 'holderLive', 'relayed', 'principalMatches', 'sessionLive'],
    set: { status: constant('recorded'), answer: input('answer') },
  },
  /**
   * `answer`, for an answer POST that has not read its session: only a question's record that carries
   * its session's principal — the caller's — and its session's expiry, not yet passed.
   */
  answerForPrincipal: {
    from: ['pending'],
    guards: ['notExpired', 'holderLiveOrAbsent', 'question', 'principalMatches', 'sessionLive'],
    set: { status: constant('answered'), answer: input('answer') },
    returnsRefused: true,
  },
  /** The holder is alive: its lease extended, whatever the status. */
  renewHolder: { from: 'any', set: { holderUntil: input('until') } },
  /** The holder released its call: the lease removed, whatever the status. */
  detachHolder: { from: 'any', remove: ['holderUntil'] },
} as const satisfies Record<string, Transition>;

export type TransitionName = keyof typeof PENDING_TRANSITIONS;

/** The whole condition of a transition: one of its starting statuses, and every guard. */
export function conditionOf(transition: Transition): Condition {
  const from =
    transition.from === 'any'
      ? ({ op: 'exists' } as const)
      : or(
          ...transition.from.map((f) => (typeof f === 'string' ? statusIs(f) : and(statusIs(f.status), GUARDS[f.if]))),
        );
  const guards = (transition.guards ?? []).map((name) => GUARDS[name]);
  return guards.length === 0 ? from : and(from, ...guards);
}

function inputValue(name: InputName, inputs: TransitionInputs): string | number {
  const value = name === 'staleBefore' ? inputs.nowMs - CLAIM_LEASE_MS : inputs[name];
  if (value === undefined) throw new Error(`a pending-record transition needs the input ${name}`);
  return value;
}

// ---- DynamoDB: the transition as one conditional UpdateItem ----

/** A conditional update of one pending record (its key added by the store). */
export interface PendingUpdate {
  UpdateExpression: string;
  ConditionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
  ReturnValuesOnConditionCheckFailure?: 'ALL_OLD';
}

/**
 * The UpdateItem parameters of a transition. Every attribute name is a placeholder (`#status`:
 * DynamoDB reserves many plain words); values are `:<input>` and `:<constant>`; only what the
 * expressions use is sent (DynamoDB refuses unused names and values).
 */
export function dynamoUpdateOf(transition: Transition, inputs: TransitionInputs): PendingUpdate {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const name = (attributeName: string) => {
    const placeholder = `#${attributeName}`;
    names[placeholder] = attributeName;
    return placeholder;
  };
  const value = (key: string, v: unknown) => {
    const placeholder = `:${key}`;
    if (placeholder in values && values[placeholder] !== v) throw new Error(`two values named ${placeholder}`);
    values[placeholder] = v;
    return placeholder;
  };
  const operand = (o: Operand): string => {
    if ('input' in o) return value(o.input, inputValue(o.input, inputs));
    return value(o.constant, o.constant);
  };
  const condition = (c: Condition, nested: boolean): string => {
    switch (c.op) {
      case 'exists':
        return `attribute_exists(${name('pk')})`;
      case 'absent':
        return `attribute_not_exists(${name(c.attribute)})`;
      case 'and':
      case 'or': {
        const joined = c.of.map((part) => condition(part, true)).join(` ${c.op.toUpperCase()} `);
        return nested && c.of.length > 1 ? `(${joined})` : joined;
      }
      default:
        return `${name(c.attribute)} ${c.op} ${operand(c.than)}`;
    }
  };
  const sets = Object.entries(transition.set ?? {}).map(([attr, o]) => `${name(attr)} = ${operand(o)}`);
  const removes = (transition.remove ?? []).map(name);
  const update = [
    ...(sets.length ? [`SET ${sets.join(', ')}`] : []),
    ...(removes.length ? [`REMOVE ${removes.join(', ')}`] : []),
  ].join(' ');
  const ConditionExpression = condition(conditionOf(transition), false);
  return {
    UpdateExpression: update,
    ConditionExpression,
    ExpressionAttributeNames: names,
    ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
    ...(transition.returnsRefused ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
  };
}

// ---- Memory: the same transition evaluated against an item ----

function operandValue(o: Operand, inputs: TransitionInputs): string | number {
  return 'input' in o ? inputValue(o.input, inputs) : o.constant;
}

/** A condition evaluated as DynamoDB evaluates it (see Condition); `item` undefined: there is none. */
export function conditionHolds(c: Condition, item: Item | undefined, inputs: TransitionInputs): boolean {
  const it = item ?? {};
  switch (c.op) {
    case 'exists':
      return item !== undefined;
    case 'absent':
      return it[c.attribute] === undefined;
    case 'and':
      return c.of.every((part) => conditionHolds(part, item, inputs));
    case 'or':
      return c.of.some((part) => conditionHolds(part, item, inputs));
    default: {
      const left = it[c.attribute];
      const right = operandValue(c.than, inputs);
      if (typeof left !== typeof right) return false; // a missing attribute, or another type
      const l = left as typeof right;
      return c.op === '=' ? l === right : c.op === '<' ? l < right : l > right;
    }
  }
}

/** Whether the transition may be applied to `item` (undefined: there is none). */
export function transitionHolds(transition: Transition, item: Item | undefined, inputs: TransitionInputs): boolean {
  return conditionHolds(conditionOf(transition), item, inputs);
}

/** Applies the transition's writes to `item` in place (after `transitionHolds`). */
export function applyTransition(transition: Transition, item: Item, inputs: TransitionInputs): void {
  for (const [attr, o] of Object.entries(transition.set ?? {})) item[attr] = operandValue(o, inputs);
  for (const attr of transition.remove ?? []) delete item[attr];
}
