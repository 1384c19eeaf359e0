import { randomUUID } from 'node:crypto';

/**
 * The demo targets' out-of-band step for URL-mode elicitation: a consent request a person settles on
 * the target's own consent page (`consent-page.ts`). A URL-mode `accept` only says the user agreed to
 * open the URL, so a tool waits here for the decision made on the page before it proceeds.
 *
 * The demo has no user accounts: whoever opens the (unguessable) URL decides. A real server must also
 * check that the person on the page is the user the elicitation was made for.
 */

export type ConsentDecision = 'granted' | 'denied';
/** How a wait ended: the page's decision, or no decision in time, or the call went away. */
export type ConsentOutcome = ConsentDecision | 'timeout' | 'aborted' | 'unknown';

export interface ConsentRequest {
  id: string;
  /** What the person is asked, shown on the page. */
  message: string;
  /** The page to open. */
  url: string;
  /** When the request expires (ms since the epoch): the page then refuses a decision, and a wait ends. */
  expiresAt: number;
  /** The MCP client the target serves the request for, `name version` (the gateway, through a gateway). */
  via?: string;
  decision?: ConsentDecision;
}

interface Entry extends ConsentRequest {
  createdAt: number;
  waiters: Set<(outcome: ConsentOutcome) => void>;
  onDecided?: (decision: ConsentDecision) => void;
}

/** Undecided requests older than this are forgotten (checked when a new one is opened; no timers). */
const MAX_AGE_MS = 60 * 60 * 1000;
export const CONSENT_PATH = '/consent/';
/** How long a tool waits for the page after the client's URL-mode `accept`, unless told otherwise. */
export const DEFAULT_CONSENT_TIMEOUT_MS = 5 * 60 * 1000;

export class ConsentBook {
  private readonly entries = new Map<string, Entry>();

  /**
   * `origin`: the target's own http://host:port, where the consent page is served; `now`: the clock
   * (injectable, so that expiry is tested without waiting).
   */
  constructor(
    private readonly origin: string,
    readonly now: () => number = Date.now,
  ) {}

  /**
   * A new consent request; `id` defaults to a random UUID (a 2025 URL elicitation passes its
   * elicitationId). It expires after `expiresInMs` (default: when undecided requests are forgotten).
   */
  open(
    message: string,
    options: {
      id?: string;
      onDecided?: (decision: ConsentDecision) => void;
      expiresInMs?: number;
      via?: string;
    } = {},
  ): ConsentRequest {
    this.prune();
    const id = options.id ?? randomUUID();
    const createdAt = this.now();
    const entry: Entry = {
      id,
      message,
      url: `${this.origin}${CONSENT_PATH}${encodeURIComponent(id)}`,
      createdAt,
      expiresAt: createdAt + Math.min(options.expiresInMs ?? MAX_AGE_MS, MAX_AGE_MS),
      via: options.via,
      waiters: new Set(),
      onDecided: options.onDecided,
    };
    this.entries.set(id, entry);
    return this.get(id)!;
  }

  get(id: string): ConsentRequest | undefined {
    const entry = this.entries.get(id);
    return (
      entry && {
        id: entry.id,
        message: entry.message,
        url: entry.url,
        expiresAt: entry.expiresAt,
        via: entry.via,
        decision: entry.decision,
      }
    );
  }

  /** True once an undecided request can no longer be decided. */
  isExpired(request: ConsentRequest): boolean {
    return request.decision === undefined && this.now() >= request.expiresAt;
  }

  /** Records the page's decision; false when the request is unknown or already decided (a decision is final). */
  decide(id: string, decision: ConsentDecision): boolean {
    const entry = this.entries.get(id);
    if (!entry || entry.decision || this.now() >= entry.expiresAt) return false;
    entry.decision = decision;
    for (const wake of entry.waiters) wake(decision);
    entry.waiters.clear();
    entry.onDecided?.(decision);
    return true;
  }

  /** Waits for the decision, at most `timeoutMs` and never past the request's expiry; a decision already made answers at once. */
  wait(id: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<ConsentOutcome> {
    const entry = this.entries.get(id);
    if (!entry) return Promise.resolve('unknown');
    if (entry.decision) return Promise.resolve(entry.decision);
    if (options.signal?.aborted) return Promise.resolve('aborted');
    return new Promise((resolve) => {
      const finish = (outcome: ConsentOutcome): void => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        entry.waiters.delete(finish);
        resolve(outcome);
      };
      const onAbort = (): void => finish('aborted');
      const left = Math.max(0, Math.min(options.timeoutMs, entry.expiresAt - this.now()));
      const timer = setTimeout(() => finish('timeout'), left);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      entry.waiters.add(finish);
    });
  }

  /** Forgets a request (declined in the client): its page then answers 404. */
  discard(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    for (const wake of [...entry.waiters]) wake('unknown');
  }

  /** Ends every wait (the target is closing). */
  close(): void {
    for (const entry of this.entries.values()) for (const wake of [...entry.waiters]) wake('aborted');
    this.entries.clear();
  }

  private prune(): void {
    const oldest = this.now() - MAX_AGE_MS;
    for (const [id, entry] of this.entries)
      if (entry.createdAt < oldest && entry.waiters.size === 0) this.entries.delete(id);
  }
}
