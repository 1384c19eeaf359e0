import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  type CallToolResult,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  type ElicitRequestURLParams,
  type ElicitResult,
  UrlElicitationRequiredError,
} from '@modelcontextprotocol/sdk/types.js';
import { type DemoTarget, startDemoTarget } from '../../examples/targets/demo-target';
import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { modernCall } from '../modern/helpers';
import { clickOnConsentPage, openConsentPage } from '../support/consent-page';
import { eventually } from '../support/mcp-http';

/**
 * URL-mode elicitation on the demo targets as a person meets it: the URL opens the target's own
 * consent page, an `accept` from the client only means the page was opened, and the tool goes on
 * only after the person allowed it there. Driven over plain HTTP, no browser.
 */

/**
 * How long a demo target waits for the page: long where the test clicks on it (a loaded machine must not
 * expire a page the test is about to open), short where running out is what the test is about.
 */
const CLICKED_WITHIN_MS = 120_000;
const CONSENT_TIMEOUT_MS = 400;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/** Status of a GET with this Host header (fetch cannot set Host). */
function statusWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

function textOf(result: unknown): string {
  return ((result as CallToolResult).content[0] as { text: string }).text;
}

/** A 2025 client whose user accepts every URL elicitation at once and leaves the page to the test. */
async function connect(target: DemoTarget, action: ElicitResult['action'] = 'accept') {
  const asked: ElicitRequestURLParams[] = [];
  const completed: string[] = [];
  const client = new Client({ name: 'consent-test', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    if (request.params.mode === 'url') asked.push(request.params);
    return { action };
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
    completed.push(n.params.elicitationId);
  });
  client.onerror = () => undefined;
  await client.connect(new StreamableHTTPClientTransport(new URL(target.url)));
  return { client, asked, completed };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  await eventually(() => expect({ [what]: condition() }).toEqual({ [what]: true }));
}

describe('the 2025 demo target', () => {
  let target: DemoTarget;
  let user: Awaited<ReturnType<typeof connect>>;
  /** A target whose consent runs out at once, and its user. */
  let impatient: DemoTarget;
  let impatientUser: Awaited<ReturnType<typeof connect>>;
  beforeAll(async () => {
    target = await startDemoTarget({ consentTimeoutMs: CLICKED_WITHIN_MS });
    user = await connect(target);
    impatient = await startDemoTarget({ consentTimeoutMs: CONSENT_TIMEOUT_MS });
    impatientUser = await connect(impatient);
  });
  afterAll(async () => {
    await user?.client.close();
    await impatientUser?.client.close();
    await target?.close();
    await impatient?.close();
  });

  it('access_github_repo waits after `accept` until the person allows it on the page, then completes', async () => {
    const call = user.client.callTool({ name: 'access_github_repo', arguments: { repo: 'octo/<repo>' } });
    await until(() => user.asked.length === 1, 'the URL elicitation');
    const asked = user.asked[0]!;
    expect(asked.url).toBe(`${new URL(target.url).origin}/consent/${asked.elicitationId}`);

    const page = await openConsentPage(asked.url);
    expect(page.status).toBe(200);
    expect(page.html).toContain('Authorize access to octo/&lt;repo&gt;'); // escaped
    expect(page.buttons).toEqual(['allow', 'deny']);
    expect(page.action).toBe(asked.url);

    const allowed = await clickOnConsentPage(asked.url, 'allow');
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('Allowed. You can close this tab');
    expect(textOf(await call)).toBe('accessed octo/<repo>');
    expect(user.completed).toEqual([asked.elicitationId]);
    // A decision is final, and the page says so.
    const changedMind = await fetch(asked.url, { method: 'POST', headers: FORM, body: 'decision=deny' });
    expect(changedMind.status).toBe(409);
    const after = await openConsentPage(asked.url);
    expect(after.html).toContain('Already answered');
    expect(after.buttons).toEqual([]);
  });

  it('without the page, `accept` ends in a tool error, not a false success', async () => {
    const before = impatientUser.completed.length;
    const result = (await impatientUser.client.callTool({
      name: 'access_github_repo',
      arguments: { repo: 'o/r' },
    })) as CallToolResult;
    const asked = impatientUser.asked[impatientUser.asked.length - 1]!;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      `access to o/r not confirmed: the consent page ${asked.url} was not completed within ${CONSENT_TIMEOUT_MS / 1000} s`,
    );
    expect(impatientUser.completed).toHaveLength(before);
  });

  it('Deny on the page ends the call with a tool error and no completion notification', async () => {
    const before = user.completed.length;
    const call = user.client.callTool({ name: 'access_github_repo', arguments: { repo: 'o/denied' } });
    await until(() => user.asked.some((a) => a.message === 'Authorize access to o/denied'), 'the URL elicitation');
    const asked = user.asked.find((a) => a.message === 'Authorize access to o/denied')!;
    expect(await (await clickOnConsentPage(asked.url, 'deny')).text()).toContain('Denied.');
    const result = (await call) as CallToolResult;
    expect(result).toEqual({
      content: [{ type: 'text', text: 'access to o/denied denied on the consent page' }],
      isError: true,
    });
    expect(user.completed).toHaveLength(before);
  });

  it('a request declined in the client has no page any more', async () => {
    const declining = await connect(target, 'decline');
    try {
      const result = await declining.client.callTool({ name: 'access_github_repo', arguments: { repo: 'o/r' } });
      expect(textOf(result)).toBe('access to o/r not granted (decline)');
      expect((await openConsentPage(declining.asked[0]!.url)).status).toBe(404);
    } finally {
      await declining.client.close();
    }
  });

  it('url_required: Deny on the page is a tool error; the next call asks again', async () => {
    const urlRequired = () => user.client.callTool({ name: 'url_required', arguments: { resource: 'secrets' } });
    const first = await urlRequired().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(UrlElicitationRequiredError);
    const asked = (first as UrlElicitationRequiredError).elicitations[0]!;
    await clickOnConsentPage(asked.url, 'deny');
    expect(await urlRequired()).toEqual({
      content: [{ type: 'text', text: 'authorization for secrets was denied on the consent page' }],
      isError: true,
    });
    const again = await urlRequired().catch((e: unknown) => e);
    expect(again).toBeInstanceOf(UrlElicitationRequiredError);
    expect((again as UrlElicitationRequiredError).elicitations[0]?.elicitationId).not.toBe(asked.elicitationId);
  });

  it('the page refuses another Host, a form POSTed from another site, and unknown requests', async () => {
    const call = user.client.callTool({ name: 'access_github_repo', arguments: { repo: 'o/guarded' } });
    await until(() => user.asked.some((a) => a.message === 'Authorize access to o/guarded'), 'the URL elicitation');
    const asked = user.asked.find((a) => a.message === 'Authorize access to o/guarded')!;
    expect(await statusWithHost(asked.url, 'evil.example')).toBe(403); // DNS rebinding
    const foreignOrigin = await fetch(asked.url, {
      method: 'POST',
      headers: { ...FORM, origin: 'http://evil.example' },
      body: 'decision=allow',
    });
    expect(foreignOrigin.status).toBe(403);
    const badValue = await fetch(asked.url, { method: 'POST', headers: FORM, body: 'decision=maybe' });
    expect(badValue.status).toBe(400);
    const origin = new URL(target.url).origin;
    expect((await fetch(`${origin}/consent/no-such-request`)).status).toBe(404);
    expect((await fetch(`${origin}/consent/%E0%A4%A`)).status).toBe(404);
    // Nothing above decided it: the page still asks, and the person's own Deny ends the call.
    expect((await openConsentPage(asked.url)).buttons).toEqual(['allow', 'deny']);
    await clickOnConsentPage(asked.url, 'deny');
    expect(((await call) as CallToolResult).isError).toBe(true);
  });

  it('pages carry no-framing and no-store headers', async () => {
    const call = user.client.callTool({ name: 'access_github_repo', arguments: { repo: 'o/headers' } });
    await until(() => user.asked.some((a) => a.message === 'Authorize access to o/headers'), 'the URL elicitation');
    const asked = user.asked.find((a) => a.message === 'Authorize access to o/headers')!;
    const res = await fetch(asked.url);
    await res.text();
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('cache-control')).toBe('no-store');
    await clickOnConsentPage(asked.url, 'allow');
    expect(textOf(await call)).toBe('accessed o/headers');
  });
});

describe('the 2026-07-28 demo target', () => {
  let target: ModernDemoTarget;
  /** A target whose consent runs out at once. */
  let impatient: ModernDemoTarget;
  beforeAll(async () => {
    target = await startModernDemoTarget({ consentTimeoutMs: CLICKED_WITHIN_MS });
    impatient = await startModernDemoTarget({ consentTimeoutMs: CONSENT_TIMEOUT_MS });
  });
  afterAll(async () => {
    await target?.close();
    await impatient?.close();
  });

  const access = (repo: string, retry?: { action: string; requestState: string }, id = 'c1', at = target) =>
    modernCall(
      at.url,
      'tools/call',
      {
        name: 'access_github_repo',
        arguments: { repo },
        ...(retry && { inputResponses: { authorize: { action: retry.action } }, requestState: retry.requestState }),
      },
      id,
    );

  it('asks with its consent page; the retry after Allow completes', async () => {
    const first = await access('my-org/my-repo');
    expect(first.body.result.resultType).toBe('input_required');
    const { params } = first.body.result.inputRequests.authorize;
    expect(params).toEqual({
      mode: 'url',
      message: 'Authorize access to my-org/my-repo',
      url: expect.stringMatching(new RegExp(`^${new URL(target.url).origin}/consent/[0-9a-f-]{36}$`)),
    });
    await clickOnConsentPage(params.url, 'allow');
    const retry = await access(
      'my-org/my-repo',
      { action: 'accept', requestState: first.body.result.requestState },
      'c2',
    );
    expect(retry.body.result).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: 'accessed my-org/my-repo' }],
    });
  });

  it('a retry with `accept` but without the page is a tool error', async () => {
    const first = await access('a/b', undefined, 'c1', impatient);
    const retry = await access(
      'a/b',
      { action: 'accept', requestState: first.body.result.requestState },
      'c2',
      impatient,
    );
    expect(retry.body.result).toMatchObject({
      resultType: 'complete',
      isError: true,
      content: [{ type: 'text', text: 'access to a/b not confirmed: the consent page was not completed in time' }],
    });
  });

  it("one repository's allowed state does not open another", async () => {
    const first = await access('allowed/one');
    await clickOnConsentPage(first.body.result.inputRequests.authorize.params.url, 'allow');
    const other = await access('other/two', { action: 'accept', requestState: first.body.result.requestState }, 'c2');
    expect(other.body.result.resultType).toBe('input_required');
    expect(other.body.result.inputRequests.authorize.params.message).toBe('Authorize access to other/two');
  });

  it('decline ends the request: its page is gone', async () => {
    const first = await access('d/e');
    const url = first.body.result.inputRequests.authorize.params.url;
    expect(await statusWithHost(url, 'evil.example')).toBe(403);
    const retry = await access('d/e', { action: 'decline', requestState: first.body.result.requestState }, 'c2');
    expect(retry.body.result.content).toEqual([{ type: 'text', text: 'access to d/e not granted (decline)' }]);
    expect((await openConsentPage(url)).status).toBe(404);
  });
});
