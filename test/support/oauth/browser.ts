import { type Browser, chromium } from 'playwright-core';

/**
 * A person at a real browser: Debian's Chromium (`/usr/bin/chromium`, `CHROMIUM_PATH` to use another)
 * driven headless by playwright-core. `.ci/run` installs it. The flags keep it from reaching out of
 * this machine (its background services would be refused by a closed network, and slow it down).
 */
export async function startBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: [
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
 * Opens `url` in a fresh browser profile and consents as `login` at the authorization server's
 * sign-in and consent pages (oidc-provider's development pages: a login name, any password, then
 * "Continue"), until the browser lands on a URL starting with `until`. Returns that URL.
 */
export async function consentAs(browser: Browser, url: string, login: string, until: string): Promise<string> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(url);
    for (let step = 0; step < 5 && !page.url().startsWith(until); step++) {
      const name = page.locator('input[name="login"]');
      if (await name.count()) {
        await name.fill(login);
        await page.locator('input[name="password"]').fill('any password');
      }
      const submit = page.locator('button[type="submit"]').first();
      if (!(await submit.count())) {
        const text = (
          (await page
            .locator('body')
            .textContent()
            .catch(() => '')) ?? ''
        ).slice(0, 500);
        throw new Error(`consent stopped at ${page.url()}: ${text}`);
      }
      await Promise.all([page.waitForLoadState('load'), submit.click()]);
    }
    if (!page.url().startsWith(until)) throw new Error(`consent did not reach ${until}: at ${page.url()}`);
    return page.url();
  } finally {
    await context.close();
  }
}
