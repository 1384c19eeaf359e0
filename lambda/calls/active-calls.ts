/**
 * The calls this instance holds, both eras: a 2025 session's relayed calls and client streams (by
 * session and target call id), and a 2026-07-28 client's bridged calls (by bridge id). A client's
 * `notifications/cancelled` that reaches the same instance stops its call at once (on Lambda an
 * execution environment runs one invocation at a time, so a cancellation always reaches another one:
 * that goes through a marker in DynamoDB, see legacy/call-relay.ts); a shutdown (SIGTERM, or the local
 * server closing) ends every one of them, so none runs on after its process meant to stop.
 */
export interface CancellableCall {
  cancelByClient(reason: string | undefined): void;
  /**
   * Graceful shutdown: released when it can go on elsewhere, else cancelled at the target, the client told
   * and the records removed; resolves when done.
   */
  shutdown(): Promise<void>;
}

export class ActiveCalls {
  private readonly calls = new Map<string, CancellableCall>();

  register(sessionId: string, targetCallId: string, call: CancellableCall): () => void {
    const key = `${sessionId}\u0000${targetCallId}`;
    this.calls.set(key, call);
    return () => {
      if (this.calls.get(key) === call) this.calls.delete(key);
    };
  }

  get(sessionId: string, targetCallId: string): CancellableCall | undefined {
    return this.calls.get(`${sessionId}\u0000${targetCallId}`);
  }

  get size(): number {
    return this.calls.size;
  }

  /**
   * SIGTERM: every call held here is released when it can be resumed elsewhere, or else cancelled at its
   * target, its client told (-32001, retryable) and its pending records removed, before the process
   * exits; bounded by `timeoutMs`.
   */
  async shutdown(timeoutMs: number): Promise<void> {
    const all = Promise.all([...this.calls.values()].map((call) => call.shutdown()));
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([all, bound]);
    clearTimeout(timer);
  }
}
