import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listen } from './loopback';

/**
 * A loopback MCP server (2025-11-25, Streamable HTTP) that polls with SSE (SEP-1699) on every
 * `tools/call`, to measure what a client does when a server ends a call's stream before the response:
 * the call's POST stream carries only a priming event (`id`, empty data, `retry: <retryMs>` when set)
 * and ends; each GET with `Last-Event-ID` is answered with one more priming event and ended again,
 * `closes` times in all, then the response is sent on the next GET. It records every reconnect: the
 * `Last-Event-ID` it carried and the delay since the stream before it ended.
 *
 * Speaks just enough MCP for a client to connect: `initialize` (JSON, a session id), notifications
 * (202), `tools/list` (one tool, `probe`), `ping`; a standalone GET (no `Last-Event-ID`) gets 405.
 * Used by scripts/measure-client-polling.ts.
 */

export interface ProbeOptions {
  /** The `retry` field sent with each priming event; none when undefined. */
  retryMs?: number;
  /** How many times a call's stream is ended before the response is sent. */
  closes: number;
}

export interface Reconnect {
  /** The `Last-Event-ID` header it carried, or undefined. */
  lastEventId?: string;
  /** Milliseconds between the end of the previous stream of the call and this GET. */
  delayMs: number;
}

export interface ProbeCall {
  closes: number;
  reconnects: Reconnect[];
  /** The response was written on a stream (the client had it if it read that stream to the end). */
  answered: boolean;
}

export interface PollingProbe {
  url: string;
  calls: ProbeCall[];
  /** Requests other than a call's (for a client that does something unexpected). */
  other: string[];
  close(): Promise<void>;
}

const PROTOCOL = '2025-11-25';

export async function startPollingProbe(options: ProbeOptions): Promise<PollingProbe> {
  const calls: ProbeCall[] = [];
  const other: string[] = [];
  /** Per call (by stream id): its JSON-RPC id, the call record, when its last stream ended. */
  const streams = new Map<string, { id: unknown; call: ProbeCall; endedAt: number }>();

  const retryLine = options.retryMs === undefined ? '' : `retry: ${options.retryMs}\n`;

  /** Writes one event, ends the stream, and notes when it ended. */
  const endWith = (res: ServerResponse, event: string, stream: string): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'mcp-session-id': 'probe' });
    res.end(event, () => {
      const entry = streams.get(stream);
      if (entry) entry.endedAt = performance.now();
    });
  };

  const onGet = (req: IncomingMessage, res: ServerResponse): void => {
    const lastEventId = req.headers['last-event-id'];
    if (typeof lastEventId !== 'string') {
      other.push('GET (standalone)');
      res.writeHead(405, { allow: 'POST, DELETE' }).end();
      return;
    }
    const [stream, seq] = lastEventId.split('.');
    const entry = stream ? streams.get(stream) : undefined;
    if (!entry) {
      other.push(`GET Last-Event-ID ${lastEventId} (unknown)`);
      res.writeHead(404).end();
      return;
    }
    entry.call.reconnects.push({ lastEventId, delayMs: Math.round(performance.now() - entry.endedAt) });
    const next = Number(seq) + 1;
    if (entry.call.reconnects.length < options.closes) {
      endWith(res, `id: ${stream}.${next}\n${retryLine}data:\n\n`, stream);
      return;
    }
    entry.call.answered = true;
    const result = { content: [{ type: 'text', text: `answered after ${entry.call.reconnects.length} reconnects` }] };
    endWith(
      res,
      `id: ${stream}.${next}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: entry.id, result })}\n\n`,
      stream,
    );
  };

  const onPost = (
    res: ServerResponse,
    message: { id?: unknown; method?: string; params?: { protocolVersion?: string } },
  ) => {
    const json = (body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(200, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (message.id === undefined || message.method === undefined) {
      res.writeHead(202).end();
      return;
    }
    switch (message.method) {
      case 'initialize':
        json(
          {
            jsonrpc: '2.0',
            id: message.id,
            result: {
              protocolVersion: PROTOCOL,
              capabilities: { tools: {} },
              serverInfo: { name: 'polling-probe', version: '1.0.0' },
            },
          },
          { 'mcp-session-id': 'probe' },
        );
        return;
      case 'tools/list':
        json({
          jsonrpc: '2.0',
          id: message.id,
          result: { tools: [{ name: 'probe', description: 'Polls.', inputSchema: { type: 'object' } }] },
        });
        return;
      case 'ping':
        json({ jsonrpc: '2.0', id: message.id, result: {} });
        return;
      case 'tools/call': {
        const stream = randomUUID().slice(0, 8);
        const call: ProbeCall = { closes: options.closes, reconnects: [], answered: false };
        calls.push(call);
        streams.set(stream, { id: message.id, call, endedAt: performance.now() });
        endWith(res, `id: ${stream}.0\n${retryLine}data:\n\n`, stream);
        return;
      }
      default:
        other.push(`POST ${message.method}`);
        json({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } });
    }
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      if (req.method === 'GET') return onGet(req, res);
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      if (req.method !== 'POST') return void res.writeHead(405).end();
      let message: Parameters<typeof onPost>[1];
      try {
        message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return void res.writeHead(400).end();
      }
      onPost(res, message);
    });
  });
  const { base, close } = await listen(server);
  return { url: `${base}/mcp`, calls, other, close };
}
