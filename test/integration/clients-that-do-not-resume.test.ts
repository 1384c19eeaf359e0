import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import type { GatewayKind } from '../support/gateways';
import { initSession, type Json, post } from '../support/mcp-http';
import { plainSseEvents } from '../support/plain-sse';
import { withGateway } from '../support/with-gateway';

/**
 * Clients that never reconnect a POST stream the server ended, as others write them (read from their
 * code): a raw HTTP client like the reference page's samples, one that resumes only its GET stream
 * (VS Code), one that takes a `retry` field for a malformed stream (the Java SDK 2.x). Each parses
 * strictly (test/support/plain-sse.ts: a priming event's empty data is dispatched and fails to parse).
 * In the default configuration (`streamRelease: "proven"`) each gets every result while its think
 * time fits in the function timeout: its call is held on its open stream, with no priming event and
 * no `retry` on it, even past `streamReleaseAfterSeconds` and against targets whose calls could be
 * released.
 */

const RELEASE_AFTER_SECONDS = 0.5;
const THINK_MS = 1500; // past streamReleaseAfterSeconds: a released call would end the stream first

interface PlainClient {
  name: string;
  /** Takes a `retry` field for an error (the Java SDK 2.x). */
  retryIsError?: boolean;
  /** Holds a GET stream open beside its calls, reconnecting it when it ends (VS Code). */
  getStream?: boolean;
}

const CLIENTS: PlainClient[] = [
  { name: 'raw-http-sample' },
  { name: 'Visual Studio Code', getStream: true },
  { name: 'java-sdk-client', retryIsError: true },
];

/** One tools/call answered after THINK_MS; every message of its stream, in order, as the client parsed it. */
async function callAndThink(url: string, client: PlainClient): Promise<Json[]> {
  const session = await initSession(url, {
    capabilities: { elicitation: { form: {} } },
    clientInfo: { name: client.name, version: '1.0.0' },
  });
  const gets = client.getStream ? holdGetStream(url, session.headers) : undefined;
  try {
    const res = await post(url, session.headers, {
      jsonrpc: '2.0',
      id: 'call-1',
      method: 'tools/call',
      params: { name: 'use_aws', arguments: { command: 'aws s3 ls' } },
    });
    const messages: Json[] = [];
    for await (const event of plainSseEvents(res, { retryIsError: client.retryIsError })) {
      const message = JSON.parse(event.data) as Json;
      messages.push(message);
      if (message.method === 'elicitation/create') {
        // The scenario, a duration: the user thinks past streamReleaseAfterSeconds, which the gateway
        // measures (in the Lambda runtime's own process too); the stream must not end meanwhile.
        await new Promise((resolve) => setTimeout(resolve, THINK_MS));
        const answer = await post(url, session.headers, {
          jsonrpc: '2.0',
          id: message.id,
          result: { action: 'accept', content: { confirm: true } },
        });
        expect(answer.status).toBe(202);
      }
      if (message.id === 'call-1') break;
    }
    return messages;
  } finally {
    gets?.stop();
  }
}

/** A GET stream held open and reconnected whenever it ends (never a POST stream), until stopped. */
function holdGetStream(url: string, headers: Record<string, string>): { stop(): void } {
  const stopped = new AbortController();
  void (async () => {
    while (!stopped.signal.aborted) {
      const res = await fetch(url, {
        headers: { ...headers, accept: 'text/event-stream' },
        signal: stopped.signal,
      }).catch(() => undefined);
      if (!res?.ok) return;
      await res.text().catch(() => undefined);
    }
  })();
  return { stop: () => stopped.abort() };
}

const TARGETS = {
  '2026-07-28-only target (a call that waits could be released)': () => startModernDemoTarget(),
  '2025 target that polls (its stream has ids: could be released)': () =>
    startDemoTarget({ polling: { retryMs: 300 } }),
  '2025 demo target (no event store)': () => startDemoTarget(),
};

const kinds: Array<[GatewayKind, number | undefined]> = [
  ['local server', undefined],
  ['lambda runtime', 15_000],
];

describe.each(kinds)('clients that never resume a POST stream, through the %s', (kind, timeoutMs) => {
  describe.each(Object.entries(TARGETS))('to the %s', (_name, start) => {
    const gw = withGateway(
      { logLevel: 'SILENT', toolNamePrefix: 'conditional', streamReleaseAfterSeconds: RELEASE_AFTER_SECONDS },
      { kind, timeoutMs, targets: { only: start } },
    );

    it(`each gets the elicitation, then its result on the same stream, after ${THINK_MS / 1000} s of think time`, async () => {
      const runs = await Promise.all(CLIENTS.map((client) => callAndThink(gw.url, client)));
      for (const messages of runs) {
        expect(messages.map((m) => m.method ?? m.id)).toEqual(['elicitation/create', 'call-1']);
        expect(messages[1]!.result.content[0].text).toBe('executed: aws s3 ls');
      }
    }, 60_000);
  });
});
