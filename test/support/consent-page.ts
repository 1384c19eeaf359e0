/**
 * What a person does with a demo target's consent page in a browser, over plain HTTP: open the URL
 * from a URL-mode elicitation, find the form and its buttons, click one (a form POST from the page's
 * own origin, as a browser sends it).
 */

export interface ConsentPage {
  status: number;
  html: string;
  /** The form's POST target, absolute; undefined when the page has no form. */
  action?: string;
  /** The `decision` values of the page's buttons. */
  buttons: string[];
}

export async function openConsentPage(url: string): Promise<ConsentPage> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  const html = await res.text();
  const action = /<form method="post" action="([^"]+)">/.exec(html)?.[1];
  const buttons = [...html.matchAll(/<button type="submit" name="decision" value="([^"]+)"/g)].map((m) => m[1] ?? '');
  return { status: res.status, html, action: action && new URL(unescapeHtml(action), url).href, buttons };
}

/** Opens the page and clicks `button`; fails the test if the page offers no such button. */
export async function clickOnConsentPage(url: string, button: 'allow' | 'deny' = 'allow'): Promise<Response> {
  const page = await openConsentPage(url);
  if (page.status !== 200 || !page.action || !page.buttons.includes(button)) {
    throw new Error(`consent page ${url} (HTTP ${page.status}) has no "${button}" button`);
  }
  return fetch(page.action, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(url).origin },
    body: new URLSearchParams({ decision: button }).toString(),
    signal: AbortSignal.timeout(5000),
  });
}

function unescapeHtml(html: string): string {
  return html
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
}
