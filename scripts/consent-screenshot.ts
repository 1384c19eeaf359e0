/**
 * A screenshot of the demo's consent page (URL elicitation) as a phone shows it, for docs/:
 * starts the local gateway with its demo targets, calls `demo___access_github_repo` through the
 * gateway with the official SDK client, opens the page the elicitation names in headless Chromium
 * (390 × 844 CSS pixels, a phone's viewport) and writes the PNG.
 *
 *   npx tsx scripts/consent-screenshot.ts [docs/consent-page.png]   (needs `chromium` on the PATH, or CHROMIUM=path)
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startLocalGateway } from '../dev/local-gateway';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const QUIET = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

async function main(): Promise<void> {
  const out = resolve(process.argv[2] ?? join(__dirname, '..', 'docs', 'consent-page.png'));
  const gateway = await startLocalGateway({
    port: 0,
    logger: QUIET,
    startupReport: false,
    demoTargets: { demo: { port: 0 }, demoModern: { port: 0 } },
  });
  const client = new Client({ name: 'screenshot', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
  let pageUrl: ((url: string) => void) | undefined;
  const opened = new Promise<string>((resolveUrl) => (pageUrl = resolveUrl));
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    if (request.params.mode === 'url') pageUrl?.(request.params.url);
    return { action: 'accept' };
  });
  const profile = mkdtempSync(join(tmpdir(), 'consent-chromium-'));
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url)));
    const call = client.callTool({ name: 'demo___access_github_repo', arguments: { repo: 'octo/hello-world' } });
    call.catch(() => undefined); // awaited below; a failure before then must not crash the script
    const url = await opened;
    // Asynchronously: the page is served by this process, whose event loop must keep running.
    await promisify(execFile)(
      process.env.CHROMIUM ?? 'chromium',
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--hide-scrollbars',
        `--user-data-dir=${profile}`,
        '--window-size=390,844',
        `--screenshot=${out}`,
        url,
      ],
      { timeout: 60_000 },
    );
    // Deny on the page, so the call ends and everything closes.
    await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(url).origin },
      body: 'decision=deny',
    });
    await call;
    console.log(`wrote ${out}`);
  } finally {
    rmSync(profile, { recursive: true, force: true });
    await client.close();
    await gateway.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
