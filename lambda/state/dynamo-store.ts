import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoPrincipalCounters } from './dynamo/counters';
import { DynamoPendingRecords } from './dynamo/pending';
import { DynamoSessionRecords } from './dynamo/sessions';
import { DynamoStreamLog } from './dynamo/stream-log';
import { type DynamoStoreOptions, DynamoTable } from './dynamo/table';
import { DynamoWaitingCalls } from './dynamo/waiting-calls';
import type { SessionStore } from './store';

export { type DynamoStoreOptions, STORE_OPERATION_TIMEOUT_MS } from './dynamo/table';

/**
 * The session store on DynamoDB: one part per interface it implements (./store.ts), over one table
 * (./dynamo/table.ts: the client, the bound on one operation, batches, refusals) — the session records
 * (./dynamo/sessions.ts), the pending records (./dynamo/pending.ts, their transitions stated once in
 * ./pending-transitions.ts), the stream log (./dynamo/stream-log.ts), the waiting calls
 * (./dynamo/waiting-calls.ts) and the per-principal counters (./dynamo/counters.ts). The item layout
 * is ./items.ts.
 */
export class DynamoSessionStore implements SessionStore {
  private readonly sessions: DynamoSessionRecords;
  private readonly pending: DynamoPendingRecords;
  private readonly streams: DynamoStreamLog;
  private readonly waiting: DynamoWaitingCalls;
  private readonly counters: DynamoPrincipalCounters;

  constructor(client: DynamoDBDocumentClient, tableName: string, options: DynamoStoreOptions) {
    const table = new DynamoTable(client, tableName, options);
    this.sessions = new DynamoSessionRecords(table);
    this.pending = new DynamoPendingRecords(table);
    this.streams = new DynamoStreamLog(table);
    this.waiting = new DynamoWaitingCalls(table);
    this.counters = new DynamoPrincipalCounters(table);
  }

  // Session records.
  createSession(...a: Args<'createSession'>) {
    return this.sessions.createSession(...a);
  }
  loadSession(...a: Args<'loadSession'>) {
    return this.sessions.loadSession(...a);
  }
  loadForAnswer(...a: Args<'loadForAnswer'>) {
    return this.sessions.loadForAnswer(...a);
  }
  putTargetSession(...a: Args<'putTargetSession'>) {
    return this.sessions.putTargetSession(...a);
  }
  setLogLevel(...a: Args<'setLogLevel'>) {
    return this.sessions.setLogLevel(...a);
  }
  markClientResumes(...a: Args<'markClientResumes'>) {
    return this.sessions.markClientResumes(...a);
  }
  hasResumeProof(...a: Args<'hasResumeProof'>) {
    return this.sessions.hasResumeProof(...a);
  }
  deleteSession(...a: Args<'deleteSession'>) {
    return this.sessions.deleteSession(...a);
  }
  countPending(...a: Args<'countPending'>) {
    return this.sessions.countPending(...a);
  }
  detachHolder(...a: Args<'detachHolder'>) {
    return this.sessions.detachHolder(...a);
  }
  markCancelled(...a: Args<'markCancelled'>) {
    return this.sessions.markCancelled(...a);
  }
  isCancelled(...a: Args<'isCancelled'>) {
    return this.sessions.isCancelled(...a);
  }
  acquireClientStream(...a: Args<'acquireClientStream'>) {
    return this.sessions.acquireClientStream(...a);
  }
  releaseClientStream(...a: Args<'releaseClientStream'>) {
    return this.sessions.releaseClientStream(...a);
  }
  saveTargetEventId(...a: Args<'saveTargetEventId'>) {
    return this.sessions.saveTargetEventId(...a);
  }

  // Pending records.
  putPending(...a: Args<'putPending'>) {
    return this.pending.putPending(...a);
  }
  claimPending(...a: Args<'claimPending'>) {
    return this.pending.claimPending(...a);
  }
  settleClaim(...a: Args<'settleClaim'>) {
    return this.pending.settleClaim(...a);
  }
  ackClaim(...a: Args<'ackClaim'>) {
    return this.pending.ackClaim(...a);
  }
  releaseClaim(...a: Args<'releaseClaim'>) {
    return this.pending.releaseClaim(...a);
  }
  expirePending(...a: Args<'expirePending'>) {
    return this.pending.expirePending(...a);
  }
  renewHolder(...a: Args<'renewHolder'>) {
    return this.pending.renewHolder(...a);
  }
  deletePending(...a: Args<'deletePending'>) {
    return this.pending.deletePending(...a);
  }
  getPending(...a: Args<'getPending'>) {
    return this.pending.getPending(...a);
  }
  answerPending(...a: Args<'answerPending'>) {
    return this.pending.answerPending(...a);
  }
  recordAnswer(...a: Args<'recordAnswer'>) {
    return this.pending.recordAnswer(...a);
  }

  // Stream log.
  putStreamEvent(...a: Args<'putStreamEvent'>) {
    return this.streams.putStreamEvent(...a);
  }
  putStreamEvents(...a: Args<'putStreamEvents'>) {
    return this.streams.putStreamEvents(...a);
  }
  endStream(...a: Args<'endStream'>) {
    return this.streams.endStream(...a);
  }
  readStream(...a: Args<'readStream'>) {
    return this.streams.readStream(...a);
  }

  // Waiting calls.
  getWaitingCall(...a: Args<'getWaitingCall'>) {
    return this.waiting.getWaitingCall(...a);
  }
  swapWaitingCall(...a: Args<'swapWaitingCall'>) {
    return this.waiting.swapWaitingCall(...a);
  }
  deleteWaitingCall(...a: Args<'deleteWaitingCall'>) {
    return this.waiting.deleteWaitingCall(...a);
  }

  // Per-principal counters (the bridged calls' places too).
  countInitialize(...a: Args<'countInitialize'>) {
    return this.counters.countInitialize(...a);
  }
  admitSession(...a: Args<'admitSession'>) {
    return this.counters.admitSession(...a);
  }
  releaseSession(...a: Args<'releaseSession'>) {
    return this.counters.releaseSession(...a);
  }
  admitBridgedCall(...a: Args<'admitBridgedCall'>) {
    return this.counters.admitBridgedCall(...a);
  }
  releaseBridgedCall(...a: Args<'releaseBridgedCall'>) {
    return this.counters.releaseBridgedCall(...a);
  }
}

type Args<K extends keyof SessionStore> = Parameters<SessionStore[K]>;
