import { createServer, type IncomingMessage } from 'node:http';
import { forwardTo, listen } from './loopback';

/**
 * One URL in front of two gateway instances, as a function URL in front of Lambda instances, but
 * deterministic: the client's answers (JSON-RPC responses POSTed) and its reconnects (`GET`) go to the
 * second instance, everything else to the first. So a test proves that the answer and the rest of a
 * call reached an instance other than the one the call started on, with any client (one that takes a
 * single URL, such as the Python SDK's).
 */
export interface InstanceRouter {
  url: string;
  /** What went where, in order. */
  log: Array<{ method: string; to: 'first' | 'second'; lastEventId?: string; at: number }>;
  close(): Promise<void>;
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function isAnswer(bytes: Buffer): boolean {
  try {
    const message = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    return !('method' in message) && ('result' in message || 'error' in message);
  } catch {
    return false;
  }
}

export async function startInstanceRouter(first: string, second: string): Promise<InstanceRouter> {
  const log: InstanceRouter['log'] = [];
  const server = createServer((req, res) => {
    void body(req).then((bytes) => {
      const toSecond = req.method === 'GET' || (req.method === 'POST' && isAnswer(bytes));
      const lastEventId = req.headers['last-event-id'];
      log.push({
        method: req.method ?? '',
        to: toSecond ? 'second' : 'first',
        ...(typeof lastEventId === 'string' ? { lastEventId } : {}),
        at: Date.now(),
      });
      forwardTo(new URL(toSecond ? second : first), req, res).end(bytes);
    });
  });
  const { base, close } = await listen(server);
  return { url: `${base}/mcp`, log, close };
}
