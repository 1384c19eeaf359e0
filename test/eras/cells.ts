import { eventually as passes } from '../support/mcp-http';
import type { EraClient } from './clients';

/**
 * One feature cell: call the tool that exercises it and check the outcome against what the client
 * answered (the texts are computed by the target from the answers it received, so a cell passes only
 * if the request reached the client and the answer reached the target).
 */

export type Feature =
  | 'form'
  | 'form (push)'
  | 'URL'
  | '-32042'
  | 'sampling'
  | 'sampling (push)'
  | 'roots'
  | 'progress'
  | 'logging';

export interface CellContext {
  /** The exposed tool name (`deploy` directly, `legacy___deploy` through the gateway). */
  tool(name: string): string;
  /** What the JSON-RPC id of a server request must look like for a 2025 client (`gw-…` through the gateway). */
  askedId: unknown;
  /** Unique per cell, so targets that remember (-32042) start fresh. */
  tag: string;
  /**
   * The log level the target saw set (2025: `logging/setLevel`) or on its last call (2026: `_meta`
   * logLevel); absent where only what the client receives is checked.
   */
  targetLogLevel?: () => string | undefined;
}

export const is2026 = (client: EraClient) => client.version === '2026-07-28';

function expectAsked(client: EraClient, ctx: CellContext, method: string, params: Record<string, unknown>): void {
  expect(client.asked).toEqual([
    { method, id: is2026(client) ? expect.anything() : ctx.askedId, params: expect.objectContaining(params) },
  ]);
}

export async function runCell(feature: Feature, client: EraClient, ctx: CellContext): Promise<void> {
  const env = `env-${ctx.tag}`;
  switch (feature) {
    case 'form':
    case 'form (push)': {
      const result = await client.callTool(ctx.tool(feature === 'form' ? 'deploy' : 'deploy_push'), { env });
      expect(result.text).toBe(`deployed to ${env}`);
      expectAsked(client, ctx, 'elicitation/create', { message: `Deploy to ${env}?` });
      return;
    }
    case 'URL': {
      const service = `svc-${ctx.tag}`;
      const result = await client.callTool(ctx.tool('connect_account'), { service });
      expect(result.text).toBe(`connected ${service}`);
      expectAsked(client, ctx, 'elicitation/create', {
        mode: 'url',
        url: expect.stringContaining(`service=${service}`),
        message: `Connect your ${service} account`,
      });
      // 2025-11-25 requires an elicitationId for URL mode; 2026-07-28 removed it.
      if (is2026(client)) expect(client.asked[0]!.params.elicitationId).toBeUndefined();
      else expect(client.asked[0]!.params.elicitationId).toEqual(expect.any(String));
      return;
    }
    case '-32042': {
      const resource = `doc-${ctx.tag}`;
      const grant = {
        mode: 'url',
        url: `https://auth.example/grant?resource=${resource}`,
        message: `Grant access to ${resource}`,
      };
      if (is2026(client)) {
        // 2026-07-28 has no -32042: the gateway turns it into a URL input round whose retry re-issues the call.
        const result = await client.callTool(ctx.tool('read_private'), { resource });
        expect(result.text).toBe(`contents of ${resource}`);
        expectAsked(client, ctx, 'elicitation/create', grant);
        return;
      }
      const first = await client.callTool(ctx.tool('read_private'), { resource }).then(
        () => undefined,
        (error: { code?: number; data?: { elicitations?: unknown[] } }) => error,
      );
      expect(first?.code).toBe(-32042);
      expect(first?.data?.elicitations).toEqual([{ ...grant, elicitationId: expect.any(String) }]);
      const retry = await client.callTool(ctx.tool('read_private'), { resource });
      expect(retry.text).toBe(`contents of ${resource}`);
      expect(client.asked).toEqual([]);
      return;
    }
    case 'sampling':
    case 'sampling (push)': {
      const topic = `topic-${ctx.tag}`;
      const result = await client.callTool(ctx.tool(feature === 'sampling' ? 'summarize' : 'summarize_push'), {
        topic,
      });
      expect(result.text).toBe('summary by test-llm: short and sweet');
      expectAsked(client, ctx, 'sampling/createMessage', {
        messages: [{ role: 'user', content: { type: 'text', text: `Summarize ${topic}` } }],
      });
      return;
    }
    case 'roots': {
      const result = await client.callTool(ctx.tool('list_workspace'), {});
      expect(result.text).toBe('roots: file:///work/project');
      expectAsked(client, ctx, 'roots/list', {});
      return;
    }
    case 'progress': {
      const progress: number[] = [];
      const result = await client.callTool(
        ctx.tool('long_task'),
        { steps: 3 },
        { onprogress: (p) => progress.push(p.progress) },
      );
      expect(result.text).toBe('finished 3 steps');
      expect(progress).toEqual([1, 2, 3]);
      return;
    }
    case 'logging': {
      // 2025: logging/setLevel for the session; 2026-07-28: the level rides each request's _meta.
      const meta = is2026(client) ? { 'io.modelcontextprotocol/logLevel': 'warning' } : undefined;
      if (!is2026(client)) await client.setLoggingLevel('warning');
      const result = await client.callTool(ctx.tool('long_task'), { steps: 2 }, { meta });
      expect(result.text).toBe('finished 2 steps');
      // Log messages may ride another stream (the target's GET stream) and arrive after the result.
      await eventually(() => expect(client.logs.length).toBeGreaterThan(0));
      expect(client.logs).toEqual([{ level: 'warning', data: 'long_task finished 2' }]);
      if (ctx.targetLogLevel) expect(ctx.targetLogLevel()).toBe('warning');
      return;
    }
  }
}

/** Waits until `check` passes (bounded). */
export function eventually(check: () => void | Promise<void>, timeoutMs = 4000): Promise<void> {
  return passes(check, timeoutMs);
}
