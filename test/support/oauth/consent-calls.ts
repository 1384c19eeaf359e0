import { initSession, type Json, post } from '../mcp-http';

/**
 * What the consent tests do as a client and as a browser without a browser: a 2025 session whose calls
 * take no stream (a missing connection is the -32042 exception form), the link and the answer read
 * from its results, the confirmation posted as the page's form posts it, `/connections` read.
 */

/** A 2025 session with URL elicitation whose calls take no stream (JSON only): the -32042 exception form. */
export async function caller(
  mcpUrl: string,
  headers: Record<string, string> = {},
): Promise<(tool: string) => Promise<Json>> {
  const { headers: session } = await initSession(mcpUrl, { capabilities: { elicitation: { url: {} } }, headers });
  let id = 0;
  return async (tool) => {
    const res = await post(
      mcpUrl,
      { ...session, accept: 'application/json' },
      { jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: tool, arguments: {} } },
    );
    return (await res.json()) as Json;
  };
}

/** The consent link of a call refused for want of a connection (it must be that refusal). */
export function consentLinkOf(answer: Json): string {
  expect(answer.error?.code).toBe(-32042);
  const [elicitation] = answer.error.data.elicitations as Array<{ mode: string; url: string }>;
  expect(elicitation?.mode).toBe('url');
  return elicitation!.url;
}

/** The text a whoami call answered: whose token the target saw. */
export function answerOf(answer: Json): string {
  expect(answer.error).toBeUndefined();
  return String(answer.result.content[0].text);
}

/** The confirmation page's form, posted as the browser posts it (`cookie`: a browser's binding it holds). */
export function confirm(base: string, link: string, cookie?: string): Promise<Response> {
  return fetch(`${base}/connect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams({ link, confirm: 'yes' }).toString(),
    redirect: 'manual',
  });
}

export async function connectedTargets(base: string, headers: Record<string, string> = {}): Promise<string[]> {
  const res = await fetch(`${base}/connections`, { headers });
  expect(res.status).toBe(200);
  return ((await res.json()) as { connections: Array<{ target: string }> }).connections.map((c) => c.target);
}

/** The sealed link inside a consent URL. */
export const sealedLinkOf = (url: string) => new URL(url).searchParams.get('link')!;
