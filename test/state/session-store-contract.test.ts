import { ItemTooLargeError } from '../../lambda/protocol/errors';
import { systemClock } from '../../lambda/scheduling/clock';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { DynamoSessionStore } from '../../lambda/state/dynamo-store';
import {
  answerPathOf,
  CLAIM_LEASE_MS,
  newPendingRecord,
  newSessionId,
  withoutHolder,
} from '../../lambda/state/records';
import {
  type PendingRecord,
  type SessionRecord,
  type SessionStore,
  StoreUnavailableError,
  type StreamEventRecord,
  type TargetSessionRecord,
  type WaitingCallRecord,
} from '../../lambda/state/store';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { MemorySessionStore } from '../support/memory-store';

/**
 * The SessionStore contract, run against the in-memory store and the DynamoDB store on dynalite
 * (through the real AWS SDK): the fake the in-process tests use behaves like the real store. Times are
 * epoch seconds passed as `now`, so expiry is tested without waiting.
 */

interface StoreUnderTest {
  store: SessionStore;
  /** Makes every later operation fail as an unreachable DynamoDB does. */
  goDown(): void;
  close(): Promise<void>;
}

const implementations: Array<[string, () => Promise<StoreUnderTest>]> = [
  [
    'the memory store',
    async () => {
      const store = new MemorySessionStore();
      return { store, goDown: () => (store.down = true), close: async () => undefined };
    },
  ],
  [
    'the DynamoDB store on dynalite',
    async () => {
      const dynamo: CountedDynamo = await startCountedDynamo();
      const client = createDocumentClient({ endpoint: dynamo.endpoint });
      await ensureTable(client, 'contract');
      return {
        store: new DynamoSessionStore(client, 'contract', { clock: systemClock }),
        goDown: () => (dynamo.mode = 'down'),
        close: async () => {
          client.destroy();
          await dynamo.close();
        },
      };
    },
  ],
];

const NOW = 1_900_000_000;

function sessionRecord(over: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: newSessionId(),
    principal: 'anonymous',
    protocolVersion: '2025-11-25',
    clientCapabilities: { elicitation: { form: {} } },
    clientInfo: { name: 'contract', version: '1.0.0' },
    createdAt: NOW,
    expiresAt: NOW + 3600,
    ...over,
  };
}

function pendingRecord(over: Partial<PendingRecord> = {}): PendingRecord {
  const record = newPendingRecord(Date.now(), 300, {
    kind: 'relayed',
    method: 'elicitation/create',
    target: 'demo',
    clientRequestId: 7,
    targetSessionId: 'target-session',
    targetRequestId: 3,
  });
  return { ...record, createdAt: NOW, expiresAt: NOW + 300, ...over };
}

const targetRecord = (target = 'demo'): TargetSessionRecord => ({
  target,
  targetSessionId: `${target}-session`,
  protocolVersion: '2025-11-25',
  declaredCapabilities: { elicitation: { form: {} } },
});

describe.each(implementations)('SessionStore contract: %s', (_name, open) => {
  let subject: StoreUnderTest;
  let store: SessionStore;

  beforeAll(async () => {
    subject = await open();
    store = subject.store;
  });
  afterAll(async () => subject?.close());

  describe('sessions', () => {
    it('loads what was created, with no target sessions or pending requests, and nothing for an unknown id', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      const loaded = await store.loadSession(session.id, NOW);
      expect(loaded?.session).toEqual(session);
      expect(loaded?.targets.size).toBe(0);
      expect(await store.countPending(session.id, 10, NOW)).toBe(0);
      expect(await store.loadSession(newSessionId(), NOW)).toBeUndefined();
    });

    it('counts the live pending records in the same read only when asked to (withPending), past a waiting call', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.putTargetSession(session, targetRecord());
      for (const record of [pendingRecord(), pendingRecord(), pendingRecord({ expiresAt: NOW })])
        await store.putPending(session, record);
      await store.swapWaitingCall(
        session.id,
        { streamId: 'streamAAAAAAAAAA', version: 1, state: 'released', seq: 2, snapshot: '{}', expiresAt: NOW + 60 },
        undefined,
      );
      const plain = await store.loadSession(session.id, NOW);
      expect(plain?.pendingCount).toBeUndefined();
      const counted = await store.loadSession(session.id, NOW, { withPending: true });
      expect(counted?.pendingCount).toBe(2);
      expect(counted?.targets).toEqual(plain?.targets);
      expect(counted?.session).toEqual(session);
    });

    it('leaves out attributes that are undefined, as the document client does', async () => {
      const session = sessionRecord({ clientInfo: undefined, logLevel: undefined });
      await store.createSession(session);
      const loaded = await store.loadSession(session.id, NOW);
      expect(loaded && Object.keys(loaded.session).sort()).toEqual(
        ['clientCapabilities', 'createdAt', 'expiresAt', 'id', 'principal', 'protocolVersion'].sort(),
      );
    });

    it("loads the client's capabilities and info exactly as sent: nested objects and lists, numbers, booleans, null, empty values", async () => {
      const clientCapabilities = {
        elicitation: { form: {}, url: {} },
        roots: { listChanged: true },
        sampling: { tools: {} },
        experimental: { 'x.vendor': { depth: { list: [1, -2.5, 'three', false, null, { nested: [] }] }, empty: '' } },
      };
      const session = sessionRecord({ clientCapabilities, clientInfo: { name: 'ünïcode ✓', version: '0.0.1' } });
      await store.createSession(session);
      const loaded = await store.loadSession(session.id, NOW);
      expect(loaded?.session).toEqual(session);
    });

    it('never overwrites an existing session: a second create with its id is refused and the first stays', async () => {
      const session = sessionRecord({ principal: 'alice' });
      await store.createSession(session);
      await expect(store.createSession({ ...session, principal: 'mallory' })).rejects.toThrow();
      expect((await store.loadSession(session.id, NOW))?.session.principal).toBe('alice');
    });

    it('checks expiry on every read: present until expiresAt, absent from then on (nothing is deleted)', async () => {
      const session = sessionRecord({ expiresAt: NOW + 10 });
      await store.createSession(session);
      expect(await store.loadSession(session.id, NOW + 9)).toBeDefined();
      expect(await store.loadSession(session.id, NOW + 10)).toBeUndefined();
      expect(await store.loadSession(session.id, NOW + 11)).toBeUndefined();
      // Still stored: the read decides, not a sweeper (dynalite never deletes TTL items either).
      expect(await store.loadSession(session.id, NOW)).toBeDefined();
    });

    it('loads an expired session that is still stored only when asked to (to end it)', async () => {
      const session = sessionRecord({ expiresAt: NOW + 10 });
      await store.createSession(session);
      await store.putTargetSession(session, targetRecord());
      expect(await store.loadSession(session.id, NOW + 10)).toBeUndefined();
      const expired = await store.loadSession(session.id, NOW + 10, { includeExpired: true });
      expect(expired?.session).toEqual(session);
      expect([...(expired?.targets.keys() ?? [])]).toEqual(['demo']);
      expect(await store.loadSession(newSessionId(), NOW, { includeExpired: true })).toBeUndefined();
    });

    it('reads the clock itself when no time is given', async () => {
      const past = sessionRecord({ createdAt: 1_000, expiresAt: 2_000 });
      const future = sessionRecord({ createdAt: NOW, expiresAt: Math.floor(Date.now() / 1000) + 3600 });
      await store.createSession(past);
      await store.createSession(future);
      expect(await store.loadSession(past.id)).toBeUndefined();
      expect(await store.loadSession(future.id)).toBeDefined();
    });

    it('sets the log level of an existing session, and refuses it for a missing one without creating it', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.setLogLevel(session, 'warning');
      expect((await store.loadSession(session.id, NOW))?.session.logLevel).toBe('warning');
      const missing = sessionRecord();
      await expect(store.setLogLevel(missing, 'debug')).rejects.toThrow();
      expect(await store.loadSession(missing.id, NOW)).toBeUndefined();
    });

    it('hands out copies: changing a loaded record changes nothing stored', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.putTargetSession(session, targetRecord());
      const first = await store.loadSession(session.id, NOW);
      first!.session.principal = 'changed';
      first!.targets.get('demo')!.protocolVersion = 'changed';
      session.principal = 'changed too';
      const again = await store.loadSession(session.id, NOW);
      expect(again?.session.principal).toBe('anonymous');
      expect(again?.targets.get('demo')?.protocolVersion).toBe('2025-11-25');
    });
  });

  describe('target sessions', () => {
    it('loads each target session of the session (expiring with it), and a put replacing the forgotten one replaces it', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.putTargetSession(session, targetRecord('demo'));
      await store.putTargetSession(session, targetRecord('second'));
      const forgotten = targetRecord('demo').targetSessionId;
      await store.putTargetSession(
        session,
        { ...targetRecord('demo'), targetSessionId: 'renewed' },
        { replacing: forgotten },
      );
      const loaded = await store.loadSession(session.id, NOW);
      expect([...(loaded?.targets.keys() ?? [])]).toEqual(['demo', 'second']);
      // The stored item carries the session's expiry (the TTL attribute) next to the record's fields.
      expect(loaded?.targets.get('demo')).toEqual({
        ...targetRecord('demo'),
        targetSessionId: 'renewed',
        expiresAt: session.expiresAt,
      });
      expect(await store.loadSession(session.id, session.expiresAt)).toBeUndefined();
    });

    it('keeps the first of two openers: the second put gets the kept record back and writes nothing', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      const first = { ...targetRecord('demo'), targetSessionId: 'first' };
      const second = { ...targetRecord('demo'), targetSessionId: 'second' };
      expect(await store.putTargetSession(session, first)).toEqual(first);
      expect(await store.putTargetSession(session, second)).toEqual(first);
      // Replacing names the session the target forgot: a stale name changes nothing either.
      expect(await store.putTargetSession(session, second, { replacing: 'long gone' })).toEqual(first);
      expect((await store.loadSession(session.id, NOW))?.targets.get('demo')?.targetSessionId).toBe('first');
    });
  });

  describe("where a target session's GET stream stopped", () => {
    it("keeps where a target session's GET stream stopped, only on that target session", async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.putTargetSession(session, { ...targetRecord('demo'), targetSessionId: 'one' });
      await store.saveTargetEventId(session.id, 'demo', 'one', '42');
      await store.saveTargetEventId(session.id, 'demo', 'other', '99');
      await store.saveTargetEventId(session.id, 'missing', 'one', '7');
      const loaded = await store.loadSession(session.id, NOW);
      expect(loaded?.targets.get('demo')?.lastEventId).toBe('42');
      expect(loaded?.targets.has('missing')).toBe(false);
    });
  });

  describe("the session's client GET stream", () => {
    it('is held by one holder until its planned end or its release', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      expect(await store.acquireClientStream(session, 'a', Date.now() + 60_000)).toBe(true);
      expect(await store.acquireClientStream(session, 'b', Date.now() + 60_000)).toBe(false);
      await store.releaseClientStream(session.id, 'b'); // not its holder: nothing
      expect(await store.acquireClientStream(session, 'c', Date.now() + 60_000)).toBe(false);
      await store.releaseClientStream(session.id, 'a');
      expect(await store.acquireClientStream(session, 'c', Date.now() - 1)).toBe(true);
      // c's planned end has passed (its holder died): taken over.
      expect(await store.acquireClientStream(session, 'd', Date.now() + 60_000)).toBe(true);
      // Not part of what a request of the session reads.
      expect((await store.loadSession(session.id, NOW))?.targets.size).toBe(0);
    });
  });

  describe('waiting calls', () => {
    const record = (over: Partial<WaitingCallRecord> = {}): WaitingCallRecord => ({
      streamId: 'streamAAAAAAAAAA',
      version: 1,
      state: 'held',
      holder: 'h1',
      holderUntil: Date.now() + 60_000,
      seq: 3,
      snapshot: '{"step":{"kind":"confirm"}}',
      expiresAt: NOW + 600,
      ...over,
    });

    it('writes a record only when it is at the expected version (none: only when there is none), and reads it back', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      expect(await store.swapWaitingCall(session.id, record(), undefined)).toBe(true);
      expect(await store.swapWaitingCall(session.id, record(), undefined)).toBe(false);
      expect(await store.swapWaitingCall(session.id, record({ version: 2, state: 'released' }), 5)).toBe(false);
      expect(await store.swapWaitingCall(session.id, record({ version: 2, state: 'released' }), 1)).toBe(true);
      expect(await store.getWaitingCall(session.id, 'streamAAAAAAAAAA', NOW)).toMatchObject({
        version: 2,
        state: 'released',
      });
      // Kept in the session's partition, but never read with the session.
      expect((await store.loadSession(session.id, NOW))?.targets.size).toBe(0);
      expect(await store.getWaitingCall(session.id, 'streamAAAAAAAAAA', NOW + 600)).toBeUndefined();
      await store.deleteWaitingCall(session.id, 'streamAAAAAAAAAA');
      expect(await store.getWaitingCall(session.id, 'streamAAAAAAAAAA', NOW)).toBeUndefined();
    });

    it("removes a record for its holder only (one conditional delete): another holder's stays", async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.swapWaitingCall(
        session.id,
        record({ holder: 'holder-b', holderUntil: Date.now() + 60_000 }),
        undefined,
      );
      await store.deleteWaitingCall(session.id, 'streamAAAAAAAAAA', 'holder-a');
      expect(await store.getWaitingCall(session.id, 'streamAAAAAAAAAA', NOW)).toMatchObject({ holder: 'holder-b' });
      await store.deleteWaitingCall(session.id, 'streamAAAAAAAAAA', 'holder-b');
      expect(await store.getWaitingCall(session.id, 'streamAAAAAAAAAA', NOW)).toBeUndefined();
      await store.deleteWaitingCall(session.id, 'streamAAAAAAAAAA', 'holder-b'); // gone already: nothing
    });
  });

  describe('pending requests', () => {
    let session: SessionRecord;
    beforeEach(async () => {
      session = sessionRecord();
      await store.createSession(session);
    });

    it('reads one pending request consistently (alone, or with its session for an answer), and refuses a second put of an id', async () => {
      const pending = pendingRecord();
      await store.putPending(session, pending);
      expect(await store.getPending(session.id, pending.gatewayId, NOW)).toEqual(pending);
      expect(await store.loadForAnswer(session.id, pending.gatewayId, NOW)).toEqual({ session, pending });
      expect(await store.loadForAnswer(session.id, 'gw-unknown', NOW)).toEqual({ session, pending: undefined });
      expect(await store.loadForAnswer(newSessionId(), pending.gatewayId, NOW)).toBeUndefined();
      await expect(store.putPending(session, { ...pending, method: 'sampling/createMessage' })).rejects.toThrow();
      expect((await store.getPending(session.id, pending.gatewayId, NOW))?.method).toBe('elicitation/create');
      expect(await store.getPending(session.id, 'gw-unknown', NOW)).toBeUndefined();
    });

    it('keeps each session to its own partition: another session sees none of its pending requests', async () => {
      const pending = pendingRecord();
      await store.putPending(session, pending);
      const other = sessionRecord();
      await store.createSession(other);
      expect(await store.countPending(other.id, 10, NOW)).toBe(0);
      expect(await store.getPending(other.id, pending.gatewayId, NOW)).toBeUndefined();
      expect(await store.claimPending(other.id, pending.gatewayId, NOW)).toBeUndefined();
      expect((await store.getPending(session.id, pending.gatewayId, NOW))?.status).toBe('pending');
    });

    it('leaves an expired pending request out of reads, while the session is still served', async () => {
      const pending = pendingRecord({ expiresAt: NOW + 5 });
      await store.putPending(session, pending);
      expect(await store.getPending(session.id, pending.gatewayId, NOW + 4)).toBeDefined();
      expect(await store.getPending(session.id, pending.gatewayId, NOW + 5)).toBeUndefined();
      const loaded = await store.loadSession(session.id, NOW + 5);
      expect(loaded?.session.id).toBe(session.id);
      expect(await store.countPending(session.id, 10, NOW + 4)).toBe(1);
      expect(await store.countPending(session.id, 10, NOW + 5)).toBe(0);
    });

    it('loads a session without its pending requests: the read does not grow with them', async () => {
      for (let i = 0; i < 5; i++) await store.putPending(session, pendingRecord());
      const loaded = await store.loadSession(session.id, NOW);
      expect(Object.keys(loaded ?? {}).sort()).toEqual(['session', 'targets']);
      expect(await store.countPending(session.id, 10, NOW)).toBe(5);
    });

    it('claims a pending request exactly once (pending → delivering, with a token); settling makes it answered', async () => {
      const pending = pendingRecord();
      await store.putPending(session, pending);
      const token = await store.claimPending(session.id, pending.gatewayId, NOW);
      expect(token).toEqual(expect.any(String));
      expect(await store.claimPending(session.id, pending.gatewayId, NOW)).toBeUndefined();
      expect((await store.getPending(session.id, pending.gatewayId, NOW))?.status).toBe('delivering');
      expect(await store.settleClaim(session.id, pending.gatewayId, 'not-the-token')).toBe(false);
      expect(await store.settleClaim(session.id, pending.gatewayId, token!)).toBe(true);
      expect(await store.settleClaim(session.id, pending.gatewayId, token!)).toBe(false);
      expect(await store.getPending(session.id, pending.gatewayId, NOW)).toEqual({ ...pending, status: 'answered' });
      expect(await store.claimPending(session.id, pending.gatewayId, NOW)).toBeUndefined();
      // Refused with the record as it stands (so the holder learns why without reading it).
      expect(await store.expirePending(session.id, pending.gatewayId)).toEqual({
        written: false,
        current: { ...pending, status: 'answered' },
      });
    });

    it('releases a claim (the delivery did not reach the target): pending again, claimable by the next answer', async () => {
      const pending = pendingRecord();
      await store.putPending(session, pending);
      const first = await store.claimPending(session.id, pending.gatewayId, NOW);
      expect(await store.releaseClaim(session.id, pending.gatewayId, 'not-the-token')).toBe(false);
      expect(await store.releaseClaim(session.id, pending.gatewayId, first!)).toBe(true);
      expect(await store.getPending(session.id, pending.gatewayId, NOW)).toEqual(pending);
      const second = await store.claimPending(session.id, pending.gatewayId, NOW);
      expect(second).toEqual(expect.any(String));
      expect(second).not.toBe(first);
      expect(await store.releaseClaim(session.id, pending.gatewayId, first!)).toBe(false);
    });

    it('lets the holder acknowledge only the live claim; settling or releasing clears it', async () => {
      const pending = pendingRecord();
      await store.putPending(session, pending);
      expect(await store.ackClaim(session.id, pending.gatewayId, 'no-claim-yet')).toBe(false);
      const token = await store.claimPending(session.id, pending.gatewayId, NOW);
      expect(await store.ackClaim(session.id, pending.gatewayId, 'not-the-token')).toBe(false);
      expect((await store.getPending(session.id, pending.gatewayId, NOW))?.ack).toBeUndefined();
      expect(await store.ackClaim(session.id, pending.gatewayId, token!)).toBe(true);
      expect((await store.getPending(session.id, pending.gatewayId, NOW))?.ack).toBe(token);
      expect(await store.releaseClaim(session.id, pending.gatewayId, token!)).toBe(true);
      expect(await store.getPending(session.id, pending.gatewayId, NOW)).toEqual(pending);
      expect(await store.ackClaim(session.id, pending.gatewayId, token!)).toBe(false);
      const second = await store.claimPending(session.id, pending.gatewayId, NOW);
      expect(await store.ackClaim(session.id, pending.gatewayId, second!)).toBe(true);
      expect(await store.settleClaim(session.id, pending.gatewayId, second!)).toBe(true);
      expect(await store.getPending(session.id, pending.gatewayId, NOW)).toEqual({ ...pending, status: 'answered' });
    });

    it('lets exactly one of several concurrent claims win (two instances answering at once)', async () => {
      const pending = pendingRecord();
      await store.putPending(session, pending);
      const claims = await Promise.all(
        Array.from({ length: 6 }, () => store.claimPending(session.id, pending.gatewayId, NOW)),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
    });

    it('refuses to claim an unknown or expired request; the holder expires it regardless of time, once', async () => {
      const pending = pendingRecord({ expiresAt: NOW + 5 });
      await store.putPending(session, pending);
      expect(await store.claimPending(session.id, 'gw-unknown', NOW)).toBeUndefined();
      expect(await store.claimPending(session.id, pending.gatewayId, NOW + 5)).toBeUndefined();
      expect(await store.expirePending(session.id, pending.gatewayId)).toEqual({ written: true });
      // Refused once expired: the record found, past its TTL too (the refusal returns it as it is).
      expect(await store.expirePending(session.id, pending.gatewayId)).toEqual({
        written: false,
        current: { ...pending, status: 'expired' },
      });
      expect(await store.claimPending(session.id, pending.gatewayId, NOW)).toBeUndefined();
      expect(await store.expirePending(session.id, 'gw-unknown')).toEqual({ written: false, current: undefined });
    });

    it('does not let the holder expire a request whose answer is being delivered (a fresh claim)', async () => {
      const pending = pendingRecord();
      await store.putPending(session, pending);
      const token = await store.claimPending(session.id, pending.gatewayId, NOW);
      expect(await store.expirePending(session.id, pending.gatewayId)).toMatchObject({
        written: false,
        current: { status: 'delivering', claim: token },
      });
      expect(await store.settleClaim(session.id, pending.gatewayId, token!)).toBe(true);
    });

    it('takes over a claim older than the lease (its instance died mid-delivery): a new claim or the holder', async () => {
      const stale = Date.now() - CLAIM_LEASE_MS - 1000;
      const claimed = pendingRecord({ status: 'delivering', claim: 'dead', claimedAt: stale });
      const expiring = pendingRecord({ status: 'delivering', claim: 'dead', claimedAt: stale });
      await store.putPending(session, claimed);
      await store.putPending(session, expiring);
      expect(await store.claimPending(session.id, claimed.gatewayId, NOW)).toEqual(expect.any(String));
      expect(await store.settleClaim(session.id, claimed.gatewayId, 'dead')).toBe(false);
      expect(await store.expirePending(session.id, expiring.gatewayId)).toEqual({ written: true });
    });

    it("refuses to claim or answer once the holder's lease ran out (the instance holding the call died); renewing extends it", async () => {
      const lapsed = pendingRecord({ holderUntil: Date.now() - 1 });
      const questionLapsed = pendingRecord({ kind: 'question', holderUntil: Date.now() - 1 });
      const renewed = pendingRecord({ holderUntil: Date.now() - 1 });
      for (const record of [lapsed, questionLapsed, renewed]) await store.putPending(session, record);
      expect(await store.claimPending(session.id, lapsed.gatewayId, NOW)).toBeUndefined();
      expect(await store.answerPending(session.id, questionLapsed.gatewayId, '{}', NOW)).toEqual({
        written: false,
        current: questionLapsed,
      });
      await store.renewHolder(session.id, [renewed.gatewayId, 'gw-unknown'], Date.now() + 60_000);
      expect(await store.claimPending(session.id, renewed.gatewayId, NOW)).toEqual(expect.any(String));
      expect(await store.getPending(session.id, 'gw-unknown', NOW)).toBeUndefined();
    });

    it('detaching the holder (a released call) removes the lease: the records are claimed and answered without one', async () => {
      const lapsed = pendingRecord({ holderUntil: Date.now() - 1 });
      const questionLapsed = pendingRecord({ kind: 'question', holderUntil: Date.now() - 1 });
      for (const record of [lapsed, questionLapsed]) await store.putPending(session, record);
      await store.detachHolder(session.id, [lapsed.gatewayId, questionLapsed.gatewayId, 'gw-unknown']);
      expect((await store.getPending(session.id, lapsed.gatewayId, NOW))?.holderUntil).toBeUndefined();
      expect(await store.claimPending(session.id, lapsed.gatewayId, NOW)).toEqual(expect.any(String));
      expect(await store.answerPending(session.id, questionLapsed.gatewayId, '{}', NOW)).toEqual({ written: true });
      expect(await store.getPending(session.id, 'gw-unknown', NOW)).toBeUndefined();
    });

    it('stores the answer to a held request exactly once; a claim and an answer exclude each other', async () => {
      const held = pendingRecord({ kind: 'question', target: 'demo' });
      await store.putPending(session, held);
      const first = JSON.stringify({ jsonrpc: '2.0', id: held.gatewayId, result: { action: 'accept' } });
      const second = JSON.stringify({ jsonrpc: '2.0', id: held.gatewayId, result: { action: 'decline' } });
      expect(await store.answerPending(session.id, held.gatewayId, first, NOW)).toEqual({ written: true });
      // Refused with the record as it stands: the first answer (how a resent write knows it was applied).
      expect(await store.answerPending(session.id, held.gatewayId, second, NOW)).toEqual({
        written: false,
        current: { ...held, status: 'answered', answer: first },
      });
      expect(await store.claimPending(session.id, held.gatewayId, NOW)).toBeUndefined();
      expect(await store.getPending(session.id, held.gatewayId, NOW)).toEqual({
        ...held,
        status: 'answered',
        answer: first,
      });

      const claimed = pendingRecord({ kind: 'question' });
      await store.putPending(session, claimed);
      expect(await store.claimPending(session.id, claimed.gatewayId, NOW)).toEqual(expect.any(String));
      expect(await store.answerPending(session.id, claimed.gatewayId, first, NOW)).toMatchObject({
        written: false,
        current: { status: 'delivering' },
      });
      expect((await store.getPending(session.id, claimed.gatewayId, NOW))?.answer).toBeUndefined();
    });

    it('records the answer to a relayed request for its live holder exactly once: not without a lease, nor once claimed, expired or lapsed', async () => {
      const relayed = pendingRecord({ holderUntil: Date.now() + 60_000 });
      const unleased = pendingRecord();
      const lapsed = pendingRecord({ holderUntil: Date.now() - 1 });
      const claimed = pendingRecord({ holderUntil: Date.now() + 60_000 });
      const expiring = pendingRecord({ holderUntil: Date.now() + 60_000, expiresAt: NOW + 5 });
      for (const record of [relayed, unleased, lapsed, claimed, expiring]) await store.putPending(session, record);
      const { holderUntil: _none, ...withoutLease } = unleased;
      await store.detachHolder(session.id, [unleased.gatewayId]);
      const answer = JSON.stringify({ result: { action: 'accept' } });
      expect(await store.recordAnswer(session.id, relayed.gatewayId, answer, NOW)).toBe(true);
      expect(await store.recordAnswer(session.id, relayed.gatewayId, answer, NOW)).toBe(false);
      expect(await store.claimPending(session.id, relayed.gatewayId, NOW)).toBeUndefined();
      expect(await store.expirePending(session.id, relayed.gatewayId)).toMatchObject({
        written: false,
        current: { status: 'recorded' },
      });
      expect(await store.getPending(session.id, relayed.gatewayId, NOW)).toEqual({
        ...relayed,
        status: 'recorded',
        answer,
      });
      expect(await store.recordAnswer(session.id, unleased.gatewayId, answer, NOW)).toBe(false);
      expect(await store.getPending(session.id, unleased.gatewayId, NOW)).toEqual(withoutLease);
      expect(await store.recordAnswer(session.id, lapsed.gatewayId, answer, NOW)).toBe(false);
      expect(await store.claimPending(session.id, claimed.gatewayId, NOW)).toEqual(expect.any(String));
      expect(await store.recordAnswer(session.id, claimed.gatewayId, answer, NOW)).toBe(false);
      expect(await store.recordAnswer(session.id, expiring.gatewayId, answer, NOW + 5)).toBe(false);
      expect(await store.recordAnswer(session.id, 'gw-unknown', answer, NOW)).toBe(false);
    });

    it("records an answer without the session read only on a relayed request's record of the caller's live session", async () => {
      const leased = { holderUntil: Date.now() + 60_000, principal: session.principal, sessionExpiresAt: NOW + 10 };
      const own = pendingRecord(leased);
      const question = pendingRecord({ ...leased, kind: 'question' });
      const others = pendingRecord({ ...leased, principal: 'someone-else' });
      const old = pendingRecord({ holderUntil: leased.holderUntil }); // written before records carried them
      const outlived = pendingRecord({ ...leased, sessionExpiresAt: NOW });
      for (const record of [own, question, others, old, outlived]) await store.putPending(session, record);
      const answer = JSON.stringify({ result: { action: 'accept' } });
      const asCaller = { principal: session.principal };
      expect(await store.recordAnswer(session.id, own.gatewayId, answer, NOW, asCaller)).toBe(true);
      expect(await store.getPending(session.id, own.gatewayId, NOW)).toEqual({ ...own, status: 'recorded', answer });
      expect(await store.recordAnswer(session.id, own.gatewayId, answer, NOW, asCaller)).toBe(false);
      for (const refused of [question, others, old, outlived]) {
        expect(await store.recordAnswer(session.id, refused.gatewayId, answer, NOW, asCaller)).toBe(false);
        expect(await store.getPending(session.id, refused.gatewayId, NOW)).toEqual(refused);
      }
      // Without a principal, as before: the record's principal and its session's expiry are not looked at.
      expect(await store.recordAnswer(session.id, outlived.gatewayId, answer, NOW)).toBe(true);
    });

    it("stores a question's answer without the session read only on a question of the caller's live session", async () => {
      const leased = {
        kind: 'question' as const,
        holderUntil: Date.now() + 60_000,
        principal: session.principal,
        sessionExpiresAt: NOW + 10,
      };
      const own = pendingRecord(leased);
      const relayed = pendingRecord({ ...leased, kind: 'relayed' });
      const others = pendingRecord({ ...leased, principal: 'someone-else' });
      const old = pendingRecord({ kind: 'question', holderUntil: leased.holderUntil });
      const outlived = pendingRecord({ ...leased, sessionExpiresAt: NOW });
      for (const record of [own, relayed, others, old, outlived]) await store.putPending(session, record);
      const answer = JSON.stringify({ jsonrpc: '2.0', id: own.gatewayId, result: { action: 'accept' } });
      const asCaller = { principal: session.principal };
      expect((await store.answerPending(session.id, own.gatewayId, answer, NOW, asCaller)).written).toBe(true);
      expect(await store.getPending(session.id, own.gatewayId, NOW)).toEqual({ ...own, status: 'answered', answer });
      expect((await store.answerPending(session.id, own.gatewayId, answer, NOW, asCaller)).written).toBe(false);
      for (const refused of [relayed, others, old, outlived]) {
        expect((await store.answerPending(session.id, refused.gatewayId, answer, NOW, asCaller)).written).toBe(false);
        expect(await store.getPending(session.id, refused.gatewayId, NOW)).toEqual(refused);
      }
    });

    it('marks in a new gateway id how its answer is taken, and a record no holder holds as read first', () => {
      const fields = { method: 'elicitation/create', target: 'demo', clientRequestId: 7, session };
      const relayed = newPendingRecord(Date.now(), 300, { ...fields, kind: 'relayed', targetRequestId: 3 });
      const question = newPendingRecord(Date.now(), 300, { ...fields, kind: 'question' });
      expect(answerPathOf(relayed.gatewayId)).toBe('record');
      expect(answerPathOf(question.gatewayId)).toBe('question');
      for (const record of [relayed, question]) {
        expect(record.gatewayId).toMatch(/^gw-[A-Za-z0-9_-]{22}$/);
        const unheld = withoutHolder(record);
        expect(answerPathOf(unheld.gatewayId)).toBe('read');
        expect(unheld).not.toHaveProperty('holderUntil');
        expect(unheld.gatewayId.slice(4)).toBe(record.gatewayId.slice(4));
      }
      // A question's target id is its gateway id; a relayed request's stays the target's.
      expect(withoutHolder(question).targetRequestId).toBe(withoutHolder(question).gatewayId);
      expect(withoutHolder(relayed).targetRequestId).toBe(3);
      expect(answerPathOf('gw-unknown')).toBe('read');
    });

    it("keeps a new record's session principal and expiry when it is created for a session", async () => {
      const record = newPendingRecord(Date.now(), 300, {
        kind: 'relayed',
        method: 'elicitation/create',
        target: 'demo',
        clientRequestId: 7,
        session,
      });
      expect(record).toMatchObject({ principal: session.principal, sessionExpiresAt: session.expiresAt });
      expect(record).not.toHaveProperty('session');
      await store.putPending(session, record);
      expect(await store.getPending(session.id, record.gatewayId, 0)).toEqual(record);
    });

    it('refuses an answer to an unknown or expired request', async () => {
      const held = pendingRecord({ kind: 'question', expiresAt: NOW + 5 });
      await store.putPending(session, held);
      expect(await store.answerPending(session.id, 'gw-unknown', '{}', NOW)).toEqual({
        written: false,
        current: undefined,
      });
      expect(await store.answerPending(session.id, held.gatewayId, '{}', NOW + 5)).toEqual({
        written: false,
        current: held,
      });
      expect((await store.getPending(session.id, held.gatewayId, NOW))?.status).toBe('pending');
    });

    it('deletes one, several (more than one batch) or unknown pending requests, and leaves the others', async () => {
      const records = Array.from({ length: 30 }, () => pendingRecord());
      for (const record of records) await store.putPending(session, record);
      const [single, kept, ...many] = records;
      await store.deletePending(session.id, [single!.gatewayId]);
      await store.deletePending(session.id, [...many.map((r) => r.gatewayId), 'gw-never-existed']);
      await store.deletePending(session.id, []);
      expect(await store.countPending(session.id, 100, NOW)).toBe(1);
      expect(await store.getPending(session.id, kept!.gatewayId, NOW)).toEqual(kept);
      expect(await store.claimPending(session.id, single!.gatewayId, NOW)).toBeUndefined();
    });
  });

  describe('deleting a session', () => {
    it('removes everything in its partition: target sessions, pending requests, markers (more than one batch)', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.putTargetSession(session, targetRecord('demo'));
      await store.putTargetSession(session, targetRecord('second'));
      const pending = Array.from({ length: 26 }, () => pendingRecord());
      for (const record of pending) await store.putPending(session, record);
      await store.markCancelled(session.id, 'c.n.1', session.expiresAt);
      const other = sessionRecord();
      await store.createSession(other);
      await store.putPending(other, pendingRecord());

      await store.deleteSession(session.id);
      expect(await store.loadSession(session.id, NOW)).toBeUndefined();
      expect(await store.getPending(session.id, pending[0]!.gatewayId, NOW)).toBeUndefined();
      expect(await store.claimPending(session.id, pending[25]!.gatewayId, NOW)).toBeUndefined();
      expect(await store.isCancelled(session.id, 'c.n.1')).toBeUndefined();
      // Another session's partition is untouched.
      expect(await store.countPending(other.id, 10, NOW)).toBe(1);
    });

    it('leaves no pending record an answer could be recorded in without the session read', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      const record = pendingRecord({
        holderUntil: Date.now() + 60_000,
        principal: session.principal,
        sessionExpiresAt: session.expiresAt,
      });
      await store.putPending(session, record);
      await store.deleteSession(session.id);
      const answer = JSON.stringify({ result: {} });
      expect(
        await store.recordAnswer(session.id, record.gatewayId, answer, NOW, { principal: session.principal }),
      ).toBe(false);
      expect(await store.loadForAnswer(session.id, record.gatewayId, NOW)).toBeUndefined();
    });

    it('lets a new session be created under the id of a deleted one', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.deleteSession(session.id);
      await store.createSession({ ...session, principal: 'again' });
      expect((await store.loadSession(session.id, NOW))?.session.principal).toBe('again');
    });
  });

  describe('stream events (resumable streams)', () => {
    const event = (streamId: string, seq: number, over: Partial<StreamEventRecord> = {}): StreamEventRecord => ({
      streamId,
      seq,
      data: seq === 0 ? '' : JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { seq } }),
      expiresAt: NOW + 600,
      ...over,
    });

    it('reads a stream from a seq on, in seq order (past 9 and 99), never another stream of the session', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      for (const seq of [0, 1, 2, 9, 10, 100]) await store.putStreamEvent(session.id, event('streamAAAAAAAAAA', seq));
      await store.putStreamEvent(session.id, event('streamBBBBBBBBBB', 5));
      const read = await store.readStream(session.id, 'streamAAAAAAAAAA', 2, NOW);
      expect(read.map((e) => e.seq)).toEqual([2, 9, 10, 100]);
      expect(read[0]).toEqual(event('streamAAAAAAAAAA', 2));
      expect((await store.readStream(session.id, 'streamBBBBBBBBBB', 0, NOW)).map((e) => e.seq)).toEqual([5]);
      expect(await store.readStream(session.id, 'streamCCCCCCCCCC', 0, NOW)).toEqual([]);
    });

    it('keeps several events with one call (more than one batch), read back like single ones', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      const events = Array.from({ length: 30 }, (_, seq) => event('streamAAAAAAAAAA', seq));
      await store.putStreamEvents(session.id, events);
      expect(await store.readStream(session.id, 'streamAAAAAAAAAA', 0, NOW)).toEqual(events);
    });

    it('keeps events out of the session read, and out of other sessions', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.putTargetSession(session, targetRecord('demo'));
      await store.putStreamEvent(session.id, event('streamAAAAAAAAAA', 0));
      const loaded = await store.loadSession(session.id, NOW);
      expect([...loaded!.targets.keys()]).toEqual(['demo']);
      const other = sessionRecord();
      await store.createSession(other);
      expect(await store.readStream(other.id, 'streamAAAAAAAAAA', 0, NOW)).toEqual([]);
    });

    it('ignores expired events', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.putStreamEvent(session.id, event('streamAAAAAAAAAA', 0, { expiresAt: NOW - 1 }));
      await store.putStreamEvent(session.id, event('streamAAAAAAAAAA', 1, { expiresAt: NOW + 1 }));
      expect((await store.readStream(session.id, 'streamAAAAAAAAAA', 0, NOW)).map((e) => e.seq)).toEqual([1]);
    });

    it('ends a stream: writes its end and removes the events it names (more than one batch)', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      const seqs = Array.from({ length: 30 }, (_, i) => i);
      for (const seq of seqs) await store.putStreamEvent(session.id, event('streamAAAAAAAAAA', seq));
      await store.putStreamEvent(session.id, event('streamBBBBBBBBBB', 1));
      const end = event('streamAAAAAAAAAA', 30, { end: true, expiresAt: NOW + 60 });
      await store.endStream(session.id, end, seqs);
      expect(await store.readStream(session.id, 'streamAAAAAAAAAA', 0, NOW)).toEqual([end]);
      expect(await store.readStream(session.id, 'streamBBBBBBBBBB', 0, NOW)).toHaveLength(1);
    });

    it('ends a stream and removes the pending records it names with the same call (its call is over), not others', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      const [mine, other] = [pendingRecord(), pendingRecord()];
      for (const record of [mine, other]) await store.putPending(session, record);
      await store.putStreamEvent(session.id, event('streamAAAAAAAAAA', 0));
      const end = event('streamAAAAAAAAAA', 1, { end: true, expiresAt: NOW + 60 });
      await store.endStream(session.id, end, [0], [mine.gatewayId, 'gw-unknown']);
      expect(await store.readStream(session.id, 'streamAAAAAAAAAA', 0, NOW)).toEqual([end]);
      expect(await store.getPending(session.id, mine.gatewayId, NOW)).toBeUndefined();
      expect(await store.getPending(session.id, other.gatewayId, NOW)).toEqual(other);
      const alone = event('streamBBBBBBBBBB', 0, { end: true, expiresAt: NOW + 60 });
      await store.endStream(session.id, alone, [], [other.gatewayId]);
      expect(await store.getPending(session.id, other.gatewayId, NOW)).toBeUndefined();
    });

    it('goes with the session on delete', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.putStreamEvent(session.id, event('streamAAAAAAAAAA', 0));
      await store.endStream(session.id, event('streamAAAAAAAAAA', 1, { end: true }), []);
      await store.deleteSession(session.id);
      expect(await store.readStream(session.id, 'streamAAAAAAAAAA', 0, NOW)).toEqual([]);
    });

    it('refuses an event over the item limit with ItemTooLargeError', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await expect(
        store.putStreamEvent(session.id, event('streamAAAAAAAAAA', 1, { data: 'x'.repeat(420 * 1024) })),
      ).rejects.toBeInstanceOf(ItemTooLargeError);
    });
  });

  describe('markers and limits', () => {
    it('says why a call was ended elsewhere: cancelled by the client, or an answer the target refused', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      await store.markCancelled(session.id, 'c.n.1', session.expiresAt);
      await store.markCancelled(session.id, 'c.n.2', session.expiresAt, 'answer-lost');
      expect(await store.isCancelled(session.id, 'c.n.1')).toBe('client-cancelled');
      expect(await store.isCancelled(session.id, 'c.n.2')).toBe('answer-lost');
      expect(await store.isCancelled(session.id, 'c.n.3')).toBeUndefined();
    });

    it("refuses a session or a held answer over DynamoDB's 400 KB item limit with ItemTooLargeError (never 503)", async () => {
      const big = sessionRecord({ clientInfo: { name: 'x'.repeat(500 * 1024), version: '1' } });
      await expect(store.createSession(big)).rejects.toBeInstanceOf(ItemTooLargeError);
      expect(await store.loadSession(big.id, NOW)).toBeUndefined();
      const session = sessionRecord();
      await store.createSession(session);
      const held = pendingRecord({ kind: 'question' });
      await store.putPending(session, held);
      const answer = JSON.stringify({ jsonrpc: '2.0', id: held.gatewayId, result: { text: 'y'.repeat(420 * 1024) } });
      await expect(store.answerPending(session.id, held.gatewayId, answer, NOW)).rejects.toBeInstanceOf(
        ItemTooLargeError,
      );
      expect((await store.getPending(session.id, held.gatewayId, NOW))?.status).toBe('pending');
    });
  });

  describe('per-principal counters', () => {
    const limits = { max: 3, bucketSeconds: 300 };

    it('counts initializes per window up to the limit; the next window starts again', async () => {
      const counted = [];
      for (let i = 0; i < 4; i++) counted.push(await store.countInitialize('rate-a', NOW, 60, 3));
      expect(counted).toEqual([true, true, true, false]);
      expect(await store.countInitialize('rate-b', NOW, 60, 3)).toBe(true); // another principal
      expect(await store.countInitialize('rate-a', NOW + 60, 60, 3)).toBe(true);
    });

    it('admits live sessions up to max across expiry buckets; a release or expiry makes room, with a Retry-After until then', async () => {
      // Two sessions expiring in one bucket, one in the next: three live.
      expect(await store.admitSession('live-a', NOW + 3600, limits, NOW)).toEqual({ admitted: true });
      expect(await store.admitSession('live-a', NOW + 3610, limits, NOW)).toEqual({ admitted: true });
      expect(await store.admitSession('live-a', NOW + 3900, limits, NOW + 300)).toEqual({ admitted: true });
      const refused = await store.admitSession('live-a', NOW + 3950, limits, NOW + 350);
      // The first bucket (expiries in [NOW+3600 rounded down, +300 s)) ends first.
      const firstBucketEnd = Math.floor((NOW + 3600) / 300) * 300 + 300;
      expect(refused).toEqual({ admitted: false, retryAfterSeconds: firstBucketEnd - (NOW + 350) });
      expect(await store.admitSession('live-b', NOW + 3950, limits, NOW + 350)).toEqual({ admitted: true });
      await store.releaseSession('live-a', NOW + 3610, limits.bucketSeconds);
      expect(await store.admitSession('live-a', NOW + 3950, limits, NOW + 350)).toEqual({ admitted: true });
      // Once the first bucket's sessions expired, it no longer counts.
      expect(await store.admitSession('live-a', firstBucketEnd + 3600, limits, firstBucketEnd)).toEqual({
        admitted: true,
      });
      // A release of nothing counted is ignored (never negative).
      await store.releaseSession('live-c', NOW + 3600, limits.bucketSeconds);
      for (let i = 0; i < 3; i++)
        expect((await store.admitSession('live-c', NOW + 3600, limits, NOW)).admitted).toBe(true);
      expect((await store.admitSession('live-c', NOW + 3600, limits, NOW)).admitted).toBe(false);
    });
  });

  describe('bridged calls per principal', () => {
    // A bridged call's place expires with its holder's deadline (at most 900 s ahead), in 60 s buckets.
    const bridged = { max: 2, bucketSeconds: 60 };

    it("admits bridged calls up to max, apart from the same principal's sessions and from other principals; a release makes room", async () => {
      expect(await store.admitBridgedCall('bridged-a', NOW + 900, bridged, NOW)).toEqual({ admitted: true });
      expect(await store.admitBridgedCall('bridged-a', NOW + 30, bridged, NOW)).toEqual({ admitted: true });
      const firstBucketEnd = Math.floor((NOW + 30) / 60) * 60 + 60;
      expect(await store.admitBridgedCall('bridged-a', NOW + 900, bridged, NOW)).toEqual({
        admitted: false,
        retryAfterSeconds: firstBucketEnd - NOW,
      });
      // Sessions and bridged calls are counted apart, and per principal.
      expect(await store.admitSession('bridged-a', NOW + 3600, { max: 1, bucketSeconds: 300 }, NOW)).toEqual({
        admitted: true,
      });
      expect(await store.admitBridgedCall('bridged-b', NOW + 900, bridged, NOW)).toEqual({ admitted: true });
      await store.releaseBridgedCall('bridged-a', NOW + 900, bridged.bucketSeconds);
      expect(await store.admitBridgedCall('bridged-a', NOW + 600, bridged, NOW)).toEqual({ admitted: true });
      expect((await store.admitBridgedCall('bridged-a', NOW + 600, bridged, NOW)).admitted).toBe(false);
      // A released session frees no bridged place, and the reverse.
      await store.releaseSession('bridged-a', NOW + 3600, 300);
      expect((await store.admitBridgedCall('bridged-a', NOW + 600, bridged, NOW)).admitted).toBe(false);
    });

    it("stops counting a place whose holder died without giving it back once its deadline's bucket is over", async () => {
      expect(await store.admitBridgedCall('bridged-c', NOW + 100, bridged, NOW)).toEqual({ admitted: true });
      expect(await store.admitBridgedCall('bridged-c', NOW + 100, bridged, NOW)).toEqual({ admitted: true });
      expect((await store.admitBridgedCall('bridged-c', NOW + 200, bridged, NOW + 50)).admitted).toBe(false);
      const bucketEnd = Math.floor((NOW + 100) / 60) * 60 + 60;
      expect(await store.admitBridgedCall('bridged-c', bucketEnd + 100, bridged, bucketEnd)).toEqual({
        admitted: true,
      });
    });

    it('lets exactly max of many concurrent admissions with one deadline bucket in (instances admitting at once)', async () => {
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => store.admitBridgedCall('bridged-d', NOW + 300 + (i % 3), bridged, NOW)),
      );
      expect(results.filter((r) => r.admitted)).toHaveLength(2);
    });
  });

  describe('an unreachable store', () => {
    // Last: the store stays down for the rest of this block's file.
    it('fails every operation with StoreUnavailableError (503 to the client), never with false or undefined', async () => {
      const session = sessionRecord();
      await store.createSession(session);
      const pending = pendingRecord();
      await store.putPending(session, pending);
      subject.goDown();
      const outcomes = await Promise.allSettled([
        store.loadSession(session.id, NOW),
        store.createSession(sessionRecord()),
        store.claimPending(session.id, pending.gatewayId, NOW),
        store.settleClaim(session.id, pending.gatewayId, 'token'),
        store.releaseClaim(session.id, pending.gatewayId, 'token'),
        store.ackClaim(session.id, pending.gatewayId, 'token'),
        store.expirePending(session.id, pending.gatewayId),
        store.renewHolder(session.id, [pending.gatewayId], Date.now()),
        store.loadForAnswer(session.id, pending.gatewayId, NOW),
        store.countPending(session.id, 10, NOW),
        store.answerPending(session.id, pending.gatewayId, '{}', NOW),
        store.getPending(session.id, pending.gatewayId, NOW),
        store.deletePending(session.id, [pending.gatewayId]),
        store.putStreamEvent(session.id, { streamId: 'streamAAAAAAAAAA', seq: 0, data: '', expiresAt: NOW + 60 }),
        store.endStream(session.id, { streamId: 'streamAAAAAAAAAA', seq: 1, data: '', end: true, expiresAt: NOW }, [0]),
        store.readStream(session.id, 'streamAAAAAAAAAA', 0, NOW),
      ]);
      for (const outcome of outcomes) {
        expect(outcome.status).toBe('rejected');
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
      }
    });
  });
});
