/** What a thinking user answers to every form elicitation: yes. */
export const CONFIRMED = { action: 'accept', content: { confirm: true } } as const;

/**
 * The elicitation handler of a client whose user answers after thinking (`thinkMs()` for each
 * elicitation, in order), for the official SDK clients (v1 and v2 take the same handler).
 *
 * The one place a test client waits a fixed time before it answers. A duration, not a stand-in
 * for an event: how long the user thinks is what the gateway measures (stream release, the
 * function's deadline, pendingRequestTimeoutSeconds), so the scenario is that time passing.
 */
export function thinksThenConfirms(
  thinkMs: () => number,
  onAsked: () => void = () => undefined,
): () => Promise<typeof CONFIRMED> {
  return async () => {
    onAsked();
    await new Promise((resolve) => setTimeout(resolve, thinkMs()));
    return CONFIRMED;
  };
}
