/** What a v2 test server saw on the wire, per leg: for assertions about what the gateway sent. */
export interface Traffic {
  /** Client-to-server messages received, by method (requests and notifications). */
  requestsByMethod: Record<string, number>;
  /** Levels received with `logging/setLevel`, in order. */
  logLevels: string[];
  /** Request ids named by `notifications/cancelled`. */
  cancelledRequestIds: Array<string | number>;
  /** Every `tools/call` received. */
  calls: Array<{ tool: string; logLevel?: string; inputResponseKeys: string[]; withRequestState: boolean }>;
}

export function newTraffic(): Traffic {
  return { requestsByMethod: {}, logLevels: [], cancelledRequestIds: [], calls: [] };
}

const LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

export function recordTraffic(traffic: Traffic, raw: string): void {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return;
  }
  for (const message of Array.isArray(body) ? body : [body]) {
    const m = message as { method?: unknown; params?: Record<string, any> } | null;
    if (typeof m?.method !== 'string') continue;
    traffic.requestsByMethod[m.method] = (traffic.requestsByMethod[m.method] ?? 0) + 1;
    const params = m.params ?? {};
    if (m.method === 'logging/setLevel' && typeof params.level === 'string') traffic.logLevels.push(params.level);
    if (m.method === 'notifications/cancelled' && params.requestId !== undefined)
      traffic.cancelledRequestIds.push(params.requestId);
    if (m.method === 'tools/call') {
      traffic.calls.push({
        tool: String(params.name),
        logLevel: params._meta?.[LOG_LEVEL],
        inputResponseKeys: Object.keys(params.inputResponses ?? {}),
        withRequestState: typeof params.requestState === 'string',
      });
    }
  }
}
