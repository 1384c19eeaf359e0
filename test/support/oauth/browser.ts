import { type Browser, chromium } from 'playwright-core';
import { chromiumPath } from '../prerequisites';

/**
 * A person at a real browser: Debian's Chromium (`/usr/bin/chromium`, `CHROMIUM_PATH` to use another)
 * driven headless by playwright-core (without it, its tests are skipped: test/support/prerequisites.ts).
 * The flags keep it from reaching out of this machine (its background services would be refused by a
 * closed network, and slow it down).
 */
export async function startBrowser(options: { trustAnyCertificate?: boolean } = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      // A test's own self-signed https front (no real site is reached from here).
      ...(options.trustAnyCertificate ? ['--ignore-certificate-errors'] : []),
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * Where a browser walk ended: the page's URL, its HTTP status, its text (the first 2,000 characters),
 * and the cookies the browser held for that URL (as a `Cookie` header: what it would send there again).
 */
export interface LandedPage {
  url: string;
  status: number;
  text: string;
  cookie: string;
}

/**
 * Opens `url` in a fresh browser profile and walks the authorization server's sign-in and consent
 * pages as `login` (oidc-provider's development pages: a login name, any password, then "Continue"),
 * submitting each page's form, until the browser lands on a URL starting with `until` or on a page
 * with nothing to submit (a refusal). Returns that page. With `stopAt`, the walk ends at the first
 * navigation to a URL it accepts, before anything is submitted there, and `url` is that URL (status
 * 0): what someone who stops at a redirect and forwards it has in hand.
 */
export async function browseAs(
  browser: Browser,
  url: string,
  login: string,
  until: string,
  options: { stopAt?: (url: string) => boolean } = {},
): Promise<LandedPage> {
  const context = await browser.newContext();
  try {
    let stopped: string | undefined;
    const page = await context.newPage();
    // Every request of a redirect chain is seen here (routes see only the first): the first the
    // predicate accepts is where the walk stops, before anything on that page is submitted.
    page.on('request', (request) => {
      if (options.stopAt && !stopped && request.isNavigationRequest() && options.stopAt(request.url()))
        stopped = request.url();
    });
    // The status of the document shown: the last main-frame navigation's answer.
    let status = 0;
    page.on('response', (response) => {
      if (response.request().isNavigationRequest() && response.frame() === page.mainFrame()) status = response.status();
    });
    const landed = async (): Promise<LandedPage> => {
      // The URL changes when the document commits: read it once it has loaded.
      await page.waitForLoadState('load', { timeout: 10_000 }).catch(() => undefined);
      const text = await page.textContent('body', { timeout: 5_000 }).catch((error: unknown) => `(unread: ${error})`);
      const cookies = await context.cookies(page.url()).catch(() => []);
      const cookie = cookies.map(({ name, value }) => `${name}=${value}`).join('; ');
      return { url: page.url(), status, text: (text ?? '').slice(0, 2000), cookie };
    };
    const stoppedPage = (): LandedPage => ({ url: stopped ?? '', status: 0, text: '', cookie: '' });
    await page.goto(url);
    if (stopped) return stoppedPage();
    for (let step = 0; step < 6 && !page.url().startsWith(until); step++) {
      if (stopped) return stoppedPage();
      const name = page.locator('input[name="login"]');
      if (await name.count()) {
        await name.fill(login);
        await page.locator('input[name="password"]').fill('any password');
      }
      const submit = page.locator('button[type="submit"]').first();
      if (!(await submit.count())) return await landed();
      await Promise.all([page.waitForLoadState('load'), submit.click()]);
    }
    if (stopped) return stoppedPage();
    return await landed();
  } finally {
    await context.close();
  }
}

/**
 * Consents as `login` (browseAs) until the browser lands on a URL starting with `until`; returns
 * that URL, and throws with the page it stopped at otherwise.
 */
export async function consentAs(browser: Browser, url: string, login: string, until: string): Promise<string> {
  const page = await browseAs(browser, url, login, until);
  if (!page.url.startsWith(until)) throw new Error(`consent stopped at ${page.url}: ${page.text.slice(0, 500)}`);
  return page.url;
}
