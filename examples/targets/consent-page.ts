import type { IncomingMessage, ServerResponse } from 'node:http';
import { CONSENT_PATH, type ConsentBook, type ConsentDecision, type ConsentRequest } from './consent-book';

/**
 * The consent page a person opens from a URL-mode elicitation: `GET /consent/<id>` shows what is asked
 * with Allow and Deny buttons; the form's `POST /consent/<id>` (`decision=allow|deny`) records the
 * decision in the ConsentBook. Plain HTML without scripts; no framing (a consent button must not be
 * clickjacked); a POST from another origin is refused (a foreign page must not consent for the user).
 */

const MAX_FORM_BYTES = 1024;

export function isConsentPath(path: string): boolean {
  return path.startsWith(CONSENT_PATH);
}

export async function serveConsentPage(
  req: IncomingMessage,
  res: ServerResponse,
  book: ConsentBook,
  allowedHosts: ReadonlySet<string>,
  targetName: string,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const id = decodeId(path.slice(CONSENT_PATH.length));
  const request = id === undefined ? undefined : book.get(id);
  if (id === undefined || !request)
    return page(res, 404, 'Unknown consent request', '<p>This request does not exist or has ended.</p>');
  if (req.method === 'GET' || req.method === 'HEAD') {
    if (request.decision) return page(res, 200, 'Already answered', `<p>${decided(request.decision)}</p>`);
    if (book.isExpired(request)) return page(res, 410, 'Expired', `<p>${EXPIRED}</p>`);
    return page(res, 200, 'Consent requested', consentForm(id, request, targetName, book.now()));
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'GET, POST' }).end();
    return;
  }
  if (!sameOrigin(req, allowedHosts)) return page(res, 403, 'Refused', '<p>The form was sent from another site.</p>');
  const form = await readForm(req);
  const decision = form?.get('decision');
  if (decision !== 'allow' && decision !== 'deny')
    return page(res, 400, 'Bad request', '<p>Expected <code>decision=allow</code> or <code>decision=deny</code>.</p>');
  const outcome: ConsentDecision = decision === 'allow' ? 'granted' : 'denied';
  if (book.isExpired(request)) return page(res, 410, 'Expired', `<p>${EXPIRED}</p>`);
  if (!book.decide(id, outcome)) return page(res, 409, 'Already answered', '<p>This request was already answered.</p>');
  page(res, 200, outcome === 'granted' ? 'Allowed' : 'Denied', `<p>${decided(outcome)}</p>`);
}

const EXPIRED =
  'This request has expired and can no longer be decided; it counted as denied. Ask again from your MCP client.';

/**
 * What a person needs to decide: who asks (the target, and the MCP client it serves: the gateway),
 * what, until when, and what each button leads to.
 */
function consentForm(id: string, request: ConsentRequest, targetName: string, now: number): string {
  const target = `<strong>${escapeHtml(targetName)}</strong>`;
  const via = request.via ? ` through <strong>${escapeHtml(request.via)}</strong>` : '';
  const expires = new Date(request.expiresAt);
  const minutes = Math.max(1, Math.round((request.expiresAt - now) / 60_000));
  return `<p class="who">The MCP server ${target} asks${via}, for a tool call you started in your MCP client:</p>
<p class="ask">${escapeHtml(request.message)}</p>
<form method="post" action="${escapeHtml(CONSENT_PATH + encodeURIComponent(id))}">
  <button type="submit" name="decision" value="allow">Allow</button>
  <button type="submit" name="decision" value="deny" class="deny">Deny</button>
</form>
<p class="until">Decide by <time datetime="${expires.toISOString()}">${escapeHtml(formatUtc(expires))}</time> (in about ${minutes} minute${minutes === 1 ? '' : 's'}).</p>
<h2>What happens next</h2>
<ul>
<li><strong>Allow</strong>: ${target} goes on with the tool call, and its result appears in your MCP client.</li>
<li><strong>Deny</strong>, or no decision by then: the tool call ends without access, with a message saying so; nothing is done.</li>
<li>Either way you can close this tab afterwards: your MCP client is told.</li>
</ul>
<p class="fine">This page belongs to ${target}, not to your MCP client. Only its own buttons decide: a form sent from another site is refused.</p>`;
}

/** `2026-12-03 10:05 UTC`: the server cannot know the reader's time zone (the page runs no script). */
function formatUtc(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function decodeId(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined; // malformed escapes: no such request
  }
}

function decided(decision: ConsentDecision): string {
  return `${decision === 'granted' ? 'Allowed' : 'Denied'}. You can close this tab and return to your MCP client.`;
}

/** Browsers send Origin with a form POST; a tool without one (curl) is taken as same-origin. */
function sameOrigin(req: IncomingMessage, allowedHosts: ReadonlySet<string>): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return allowedHosts.has(new URL(origin).host.toLowerCase());
  } catch {
    return false;
  }
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) return undefined;
  let body = '';
  for await (const chunk of req as AsyncIterable<Buffer>) {
    body += chunk.toString('utf8');
    if (body.length > MAX_FORM_BYTES) return undefined;
  }
  return new URLSearchParams(body);
}

function page(res: ServerResponse, status: number, title: string, body: string): void {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,-apple-system,sans-serif;font-size:1.05rem;line-height:1.5;max-width:34rem;margin:2rem auto;padding:0 1.25rem;color:#1b1f24}
h1{font-size:1.5rem}h2{font-size:1.1rem;margin-top:2rem}
.ask{font-size:1.25rem;font-weight:600;padding:.75rem 1rem;border-left:4px solid #2f6feb;background:#f3f6fb}
form{display:flex;gap:1rem;flex-wrap:wrap;margin:1.5rem 0}
button{flex:1 1 10rem;min-height:3rem;font-size:1.1rem;border-radius:.5rem;border:1px solid #2f6feb;background:#2f6feb;color:#fff}
button.deny{background:#fff;color:#1b1f24;border-color:#8c959f}
.until{font-weight:600}.fine{font-size:.9rem;color:#57606a}
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'content-security-policy':
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
  });
  res.end(html);
}

function escapeHtml(value: string): string {
  return value.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}
