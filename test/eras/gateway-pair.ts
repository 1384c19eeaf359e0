import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createParser } from 'eventsource-parser';
import { type LocalGateway, startLocalGateway } from '../../dev/local-gateway';
import type { GatewayConfigInput } from '../../lambda/config/schema';
import type { GatewayLogger } from '../../lambda/observability/logger';
import { createDocumentClient } from '../../lambda/state/dynamo-client';
import { startCountedDynamo } from '../support/dynamo';

/**
 * Two gateway instances ('local server', the same core as the Lambda) sharing one DynamoDB
 * (dynalite), behind a loopback proxy that the official clients use as their one URL.
 *
 * The proxy sends every request round-robin, except the two steps that must cross instances:
 * - a POSTed JSON-RPC response (a client's answer to a server request) goes to the instance OTHER than
 *   the one whose stream carried that request (matched by its id, e.g. `gw-…`);
 * - a 2026-07-28 retry (`params.requestState`) goes to the instance OTHER than the one that returned
 *   that requestState in its `input_required` result.
 * It records every exchange (request body, instance, how it was routed, the response's JSON-RPC
 * messages, JSON or SSE) for assertions. Client aborts are passed on (the upstream request is destroyed).
 */

export type Json = Record<string, any>;

export interface Exchange {
  seq: number;
  /** When the proxy took the request (wall clock, ms). */
  atMs: number;
  instance: 0 | 1;
  routed: 'answer' | 'retry' | 'round-robin';
  httpMethod: string;
  body: Json | undefined;
  status?: number;
  /** JSON-RPC messages of the response, in order. */
  messages: Json[];
  /** The response ended (or broke off): `messages` is all it will ever hold. */
  ended?: true;
}

export interface LogLine {
  instance: 0 | 1;
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  extra: unknown[];
  /** When it was logged (wall clock, ms). */
  atMs: number;
}

export interface GatewayPair {
  /** The proxy's /mcp URL. */
  url: string;
  instances: [LocalGateway, LocalGateway];
  exchanges: Exchange[];
  logs: LogLine[];
  dynamodbEndpoint: string;
  tableName: string;
  /** Every item of the gateway table. */
  scanTable(): Promise<Json[]>;
  /**
   * Runs `work`; if it fails, the error carries what both instances logged and what crossed the proxy
   * meanwhile, in time order: a failure seen once under load can then be read, not guessed.
   */
  explained<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

function capturingLogger(instance: 0 | 1, logs: LogLine[]): GatewayLogger {
  const line =
    (level: LogLine['level']) =>
    (message: unknown, ...extra: unknown[]): void => {
      logs.push({ instance, level, message: String(message), extra, atMs: Date.now() });
    };
  return { debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error') };
}

export async function startGatewayPair(
  config: GatewayConfigInput,
  options: { dynamodbEndpoint?: string } = {},
): Promise<GatewayPair> {
  const closers: Array<() => Promise<void>> = [];
  let dynamodbEndpoint = options.dynamodbEndpoint;
  if (!dynamodbEndpoint) {
    const dynamo = await startCountedDynamo();
    closers.push(dynamo.close);
    dynamodbEndpoint = dynamo.endpoint;
  }
  const logs: LogLine[] = [];
  const tableName = config.tableName ?? 'mcp-gateway';
  const full: GatewayConfigInput = {
    requestStateKeys: { current: 'era-matrix-shared-key-0123456789abcdefghijklmnop' },
    logLevel: 'DEBUG',
    ...config,
  };
  const instances = (await Promise.all(
    ([0, 1] as const).map((i) =>
      startLocalGateway({
        port: 0,
        config: full,
        dynamodbEndpoint,
        demo: false,
        startupReport: false,
        logger: capturingLogger(i, logs),
        requestTimeoutMs: 30_000,
      }),
    ),
  )) as [LocalGateway, LocalGateway];
  for (const instance of instances) closers.push(instance.close);
  const proxy = await startCrossProxy(instances.map((g) => g.url) as [string, string]);
  closers.push(proxy.close);

  return {
    url: proxy.url,
    instances,
    exchanges: proxy.exchanges,
    logs,
    dynamodbEndpoint,
    tableName,
    scanTable: async () => {
      const out = await createDocumentClient({ endpoint: dynamodbEndpoint }).send(
        new ScanCommand({ TableName: tableName }),
      );
      return (out.Items ?? []) as Json[];
    },
    explained: async (work) => {
      const fromLog = logs.length;
      const fromExchange = proxy.exchanges.length;
      const startMs = Date.now();
      try {
        return await work();
      } catch (error) {
        const timeline = renderTimeline(startMs, logs.slice(fromLog), proxy.exchanges.slice(fromExchange));
        if (error instanceof Error) error.message += `\n--- meanwhile (ms since the start) ---\n${timeline}`;
        throw error;
      }
    },
    close: async () => {
      for (const close of closers.reverse()) await close().catch(() => undefined);
    },
  };
}

function renderTimeline(startMs: number, logs: LogLine[], exchanges: Exchange[]): string {
  const brief = (value: unknown) => {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    return text && text.length > 300 ? `${text.slice(0, 300)}…` : text;
  };
  const lines = [
    ...logs.map((l) => ({
      atMs: l.atMs,
      text: `#${l.instance} ${l.level} ${l.message} ${l.extra.map(brief).join(' ')}`,
    })),
    ...exchanges.map((e) => ({
      atMs: e.atMs,
      text:
        `proxy → #${e.instance} (${e.routed}) ${e.httpMethod} ${brief(e.body ?? '')} → ${e.status ?? 'no status'}` +
        ` ${e.ended ? 'ended' : 'open'}: ${e.messages.map((m) => brief(m.method ?? m.result ?? m.error)).join(' | ')}`,
    })),
  ].sort((x, y) => x.atMs - y.atMs);
  return lines.map((l) => `${String(l.atMs - startMs).padStart(6)} ${l.text}`).join('\n');
}

async function startCrossProxy(upstreams: [string, string]) {
  const exchanges: Exchange[] = [];
  /** Where each server request (by id) and each requestState came from. */
  const requestOrigin = new Map<string, 0 | 1>();
  const stateOrigin = new Map<string, 0 | 1>();
  let next: 0 | 1 = 0;

  const observe = (exchange: Exchange, message: Json) => {
    exchange.messages.push(message);
    if (typeof message.method === 'string' && message.id !== undefined)
      requestOrigin.set(String(message.id), exchange.instance);
    const state = message.result?.requestState;
    if (typeof state === 'string') stateOrigin.set(state, exchange.instance);
  };

  const route = (body: Json | undefined): Pick<Exchange, 'instance' | 'routed'> => {
    if (body && body.method === undefined && body.id !== undefined && requestOrigin.has(String(body.id))) {
      return { instance: (1 - requestOrigin.get(String(body.id))!) as 0 | 1, routed: 'answer' };
    }
    const state = body?.params?.requestState;
    if (typeof state === 'string' && stateOrigin.has(state)) {
      return { instance: (1 - stateOrigin.get(state)!) as 0 | 1, routed: 'retry' };
    }
    const instance = next;
    next = (1 - next) as 0 | 1;
    return { instance, routed: 'round-robin' };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    let body: Json | undefined;
    try {
      body = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    const exchange: Exchange = {
      seq: exchanges.length,
      atMs: Date.now(),
      ...route(body),
      httpMethod: req.method ?? 'GET',
      body,
      messages: [],
    };
    exchanges.push(exchange);
    const target = new URL(upstreams[exchange.instance]);
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: req.method,
        headers: { ...req.headers, host: target.host },
      },
      (answer) => {
        exchange.status = answer.statusCode;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        const sse = String(answer.headers['content-type'] ?? '').includes('text/event-stream');
        const parser = createParser({
          onEvent: (event) => {
            if (event.data) observe(exchange, JSON.parse(event.data));
          },
        });
        const json: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => {
          // Recorded before the client sees it, so an immediate answer is routed correctly.
          if (sse) parser.feed(chunk.toString('utf8'));
          else json.push(chunk);
          res.write(chunk);
        });
        answer.on('end', () => {
          if (!sse && json.length) {
            try {
              observe(exchange, JSON.parse(Buffer.concat(json).toString('utf8')));
            } catch {
              // not JSON: nothing to record
            }
          }
          exchange.ended = true;
          res.end();
        });
        answer.on('close', () => {
          exchange.ended = true;
        });
        answer.on('error', () => res.destroy());
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => {
      if (res.writableFinished) return;
      upstream.destroy();
      exchange.ended = true; // nothing more of it is read
    });
    upstream.end(raw);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  http.requestTimeout = 0;
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
