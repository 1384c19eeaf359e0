import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';
import { type GatewayKind, type GatewayUnderTest, startGateway } from '../support/gateways';
import { initSession } from '../support/mcp-http';
import { type AuthorizationServer, startAuthorizationServer } from '../support/oauth/authorization-server';
import { consentAs, startBrowser } from '../support/oauth/browser';
import { type ProtectedTarget, startProtectedTarget } from '../support/oauth/protected-target';
import { chromium, describeNeeding, pythonClients } from '../support/prerequisites';
import { recipesPython } from '../support/setup/python-environment';

/**
 * The reference page's URL-mode samples, as written (only the gateway URL, and the 2025 sample's
 * session id, changed as the page says), against a target that acts as the user: the URL they open
 * is the gateway's consent page, and the person signs in at a real authorization server in Chromium
 * (SAMPLE_BROWSER=relay: the sample's `webbrowser.open` hands the URL to this test and waits). Also
 * the Python SDK's client with the page's elicitation handler. The gateway registers itself at the
 * authorization server (RFC 7591): no client is configured. Through the local server, the function
 * URL in the Lambda runtime and the Web Function (the consent pages' form POST goes through each).
 */

jest.setTimeout(120_000);

const ROOT = join(__dirname, '../..');
const CLIENTS = join(ROOT, 'test/support/clients');
const python = recipesPython();
const ready = describeNeeding(chromium, pythonClients);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  opened: string[];
}

/** Runs a Python client; each `OPEN <url>` it prints is signed in as `login` in the browser, then it goes on. */
function runPython(args: string[], browser: Browser, login: string, callbackPrefix: string, env = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(python, args, {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const run: Run = { code: null, stdout: '', stderr: '', opened: [] };
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      run.stdout += chunk.toString();
      for (const match of chunk.toString().matchAll(/^OPEN (\S+)$/gm)) {
        const url = match[1]!;
        run.opened.push(url);
        consentAs(browser, url, login, callbackPrefix).then(
          () => child.stdin?.write('\n'),
          (error: unknown) => {
            run.stderr += `\nconsent failed: ${String(error)}`;
            child.kill('SIGKILL');
          },
        );
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ ...run, code });
    });
  });
}

const kinds: GatewayKind[] = ['local server', 'lambda runtime', 'web function'];

ready.each(kinds)('URL-mode samples against a target that acts as the user, through the %s', (kind) => {
  let dynamo: CountedDynamo;
  let as: AuthorizationServer;
  let target: ProtectedTarget;
  let gateway: GatewayUnderTest;
  let browser: Browser;
  let origin: string;

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    as = await startAuthorizationServer({ redirectUris: [] });
    target = await startProtectedTarget(as.issuer);
    gateway = await startGateway(
      kind,
      {
        targets: [{ name: 'github', url: target.url, userOAuth: {} }],
        // The authorization server the target names is on loopback: reachable only when the operator says so.
        outbound: { allowedOrigins: [as.issuer] },
        toolNamePrefix: 'conditional',
        logLevel: 'SILENT',
      },
      dynamo.endpoint,
      { timeoutMs: 60_000 },
    );
    origin = new URL(gateway.url).origin;
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    await target?.close();
    await as?.close();
    await dynamo?.close();
  });
  afterEach(async () => {
    // Each sample starts unconnected (all of them are the one anonymous principal).
    await fetch(`${origin}/connections/github`, { method: 'DELETE' });
  });

  const sample = (name: string, sessionId?: string) =>
    runPython(
      [
        join(CLIENTS, 'reference/run_sample.py'),
        join(CLIENTS, 'reference', name),
        gateway.url,
        '0',
        ...(sessionId ? [sessionId] : []),
      ],
      browser,
      'carol',
      `${origin}/connect/callback`,
      { SAMPLE_BROWSER: 'relay' },
    );

  it('the 2025-11-25 sample: elicitation/create (url) on the call stream, the person signs in, the same stream gives the result', async () => {
    const { sessionId } = await initSession(gateway.url, { capabilities: { elicitation: { form: {}, url: {} } } });
    const run = await sample('url_mode_2025.py', sessionId);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.opened).toHaveLength(1);
    expect(run.opened[0]!.startsWith(`${origin}/connect?link=`)).toBe(true);
    expect(run.stdout).toMatch(/^URL elicitation: Connect your account at github/m);
    expect(run.stdout).toMatch(
      /^Tool result: \{'content': \[\{'type': 'text', 'text': 'carol read my-org\/my-repo'\}\]/m,
    );
  });

  it('the 2026-07-28 sample: an input_required URL round, the person signs in, the retry gives the result', async () => {
    const run = await sample('url_mode_2026.py');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.opened).toHaveLength(1);
    expect(run.stdout).toMatch(
      /^Tool result: \{'content': \[\{'type': 'text', 'text': 'carol read my-org\/my-repo'\}\]/m,
    );
  });

  it("the Python SDK's client with the page's elicitation handler", async () => {
    const run = await runPython(
      [join(CLIENTS, 'python_url_connect.py'), gateway.url, 'access_github_repo'],
      browser,
      'carol',
      `${origin}/connect/callback`,
    );
    expect(run.stderr).not.toMatch(/Traceback/);
    expect(run.code).toBe(0);
    expect(run.opened).toHaveLength(1);
    expect(run.stdout).toMatch(/^RESULT carol read my-org\/my-repo$/m);
  });
});
