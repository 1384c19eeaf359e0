/**
 * The consent flow's pages: plain HTML, no script, nothing loaded from elsewhere, never cached and
 * never framed (a page that sends the user to an authorization server must not be clickjacked).
 */

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:; frame-ancestors 'none'",
  // same-origin: the form's POST carries this origin (no-referrer would make it "null"), and no other
  // site ever sees the link in a Referer.
  'referrer-policy': 'same-origin',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(status: number, title: string, body: string): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5}
button{font-size:1rem;padding:.5rem 1.25rem}code{background:#f3f3f3;padding:0 .25rem}.warn{color:#8a4b00}</style>
</head><body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>`;
  return new Response(html, { status, headers: HEADERS });
}

/** Without a way to prove who opens the link (no inbound identity provider): the user confirms, knowing what. */
export function confirmationPage(options: {
  target: string;
  principal: string;
  link: string;
  server: string;
}): Response {
  return page(
    200,
    `Connect your account at ${options.target}`,
    `<p>An MCP client asked this gateway to call <strong>${escapeHtml(options.target)}</strong> as you.
To allow it, you sign in at <code>${escapeHtml(options.server)}</code> and consent there; the gateway then keeps
that authorization for <code>${escapeHtml(options.principal)}</code>, and only uses it for ${escapeHtml(options.target)}.</p>
<p class="warn">Continue only if you asked for this in your own MCP client just now. If someone sent you this link,
close this page: continuing would give them access to your account.</p>
<form method="post" action="connect"><input type="hidden" name="link" value="${escapeHtml(options.link)}">
<button type="submit" name="confirm" value="yes">Continue to sign in</button></form>`,
  );
}

export function connectedPage(target: string): Response {
  return page(
    200,
    `Connected to ${target}`,
    `<p>Your account at <strong>${escapeHtml(target)}</strong> is connected. Go back to your MCP client and
continue: the call can now be made for you.</p><p>To disconnect later, ask the gateway to remove it
(<code>DELETE /connections/${escapeHtml(target)}</code>).</p>`,
  );
}

/** Why a step was refused, with what to do; never an internal detail. */
export function refusedPage(status: number, title: string, explanation: string): Response {
  return page(status, title, `<p>${escapeHtml(explanation)}</p>`);
}
