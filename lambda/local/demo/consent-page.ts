import type { IncomingMessage, ServerResponse } from 'node:http';
import { CONSENT_PATH, type ConsentBook, type ConsentDecision } from './consent-book';

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
    return page(
      res,
      200,
      'Consent requested',
      `<p><strong>${escapeHtml(targetName)}</strong> asks:</p>
<p class="ask">${escapeHtml(request.message)}</p>
<form method="post" action="${escapeHtml(CONSENT_PATH + encodeURIComponent(id))}">
  <button type="submit" name="decision" value="allow">Allow</button>
  <button type="submit" name="decision" value="deny">Deny</button>
</form>`,
    );
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
  if (!book.decide(id, outcome)) return page(res, 409, 'Already answered', '<p>This request was already answered.</p>');
  page(res, 200, outcome === 'granted' ? 'Allowed' : 'Denied', `<p>${decided(outcome)}</p>`);
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
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}.ask{font-size:1.2rem}button{font-size:1rem;padding:.5rem 1.5rem;margin-right:1rem}</style>
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
