import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startDemoTarget } from '../../examples/targets/demo-target';
import { startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import type { GatewayKind } from '../support/gateways';
import { initSession } from '../support/mcp-http';
import { describeNeeding, pythonClients } from '../support/prerequisites';
import { recipesPython } from '../support/setup/python-environment';
import { withGateway } from '../support/with-gateway';

/**
 * The reference page's 2025-era Python client samples, run as written (only the gateway URL and the
 * URL-mode sample's session id changed, as the page says) with `requests` and the dispatch rules of
 * `sseclient-py` (test/support/clients/sseclient.py: an event whose `data:` is empty is dispatched
 * with data '', which the samples' `json.loads` fails on). Such a client never reconnects a stream
 * the server ends, so it gets its result only if its call is held on its open stream with nothing on
 * it but JSON messages: no priming event, no `retry` (the default `streamRelease: "proven"`).
 *
 * Against three kinds of target, each the gateway's only one (the samples call bare tool names): the
 * 2025 demo target (no event store: its calls are never released), the 2026-07-28-only one (nothing
 * open upstream while the user thinks: releasable), and the 2025 one that polls (an event store; it
 * ends its POST stream before it asks, so the ask comes on the gateway's reconnect to it). The form
 * sample negotiates 2025-06-18, where a server cannot poll (no priming events before 2025-11-25:
 * the target's stream would end without an id, directly as through the gateway), so it runs against
 * the first two.
 */

const ROOT = join(__dirname, '../..');
const SAMPLES = join(ROOT, 'test/support/clients/reference');
const python = recipesPython();
const describeWithPython = describeNeeding(pythonClients);

interface SampleRun {
  code: number;
  stdout: string;
  stderr: string;
}

async function runSample(sample: string, url: string, thinkSeconds: number, sessionId?: string): Promise<SampleRun> {
  const args = [join(SAMPLES, 'run_sample.py'), join(SAMPLES, sample), url, String(thinkSeconds)];
  if (sessionId) args.push(sessionId);
  try {
    const { stdout, stderr } = await promisify(execFile)(python, args, { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

// A 2026-07-28 target's result also carries its `_meta` (its serverInfo), relayed as it is.
const FORM_RESULT =
  /^Tool result: \{'content': \[\{'type': 'text', 'text': 'executed: aws s3 rm s3:\/\/my-bucket\/important-file'\}\]/;
const URL_RESULT = /^Tool result: \{'content': \[\{'type': 'text', 'text': 'accessed my-org\/my-repo'\}\]/;

/** The person's think time: past `streamReleaseAfterSeconds` (a call that could be released is held). */
const THINK_SECONDS = 2;
const RELEASE_AFTER_SECONDS = 0.5;

const TARGETS = {
  '2025 demo target (no event store)': { start: () => startDemoTarget(), form: true },
  '2026-07-28-only target': { start: () => startModernDemoTarget(), form: true },
  '2025 target that polls': { start: () => startDemoTarget({ polling: { retryMs: 300 } }), form: false },
} as const;

/** The URL-mode sample assumes an existing session: opened as its application would have. */
async function existingSession(url: string): Promise<string> {
  const { sessionId } = await initSession(url, { capabilities: { elicitation: { form: {}, url: {} } } });
  return sessionId;
}

describeWithPython('the reference samples, verbatim, under sseclient-py rules', () => {
  it('the stand-in parser dispatches a priming event as data "" (so json.loads fails on it), as sseclient-py does', async () => {
    const { stdout } = await promisify(execFile)(python, [
      '-c',
      [
        'import sys; sys.path.insert(0, sys.argv[1])',
        'import sseclient',
        "chunks = [b'id: s.0\\ndata: \\n\\n', b': keep-alive\\n\\nretry: 2000\\n\\nid: s.1\\nevent: message\\nda', b'ta: {\"a\": 1}\\n\\n']",
        'print([(e.id, e.data) for e in sseclient.SSEClient(iter(chunks)).events()])',
      ].join('\n'),
      join(ROOT, 'test/support/clients'),
    ]);
    expect(stdout.trim()).toBe(`[('s.0', ''), ('s.1', '{"a": 1}')]`);
  });

  const kinds: Array<[GatewayKind, number | undefined]> = [
    ['local server', undefined],
    // A function timeout the think time fits in.
    ['lambda runtime', 15_000],
    ['web function', 15_000],
  ];
  describe.each(kinds)('through the %s', (kind, timeoutMs) => {
    describe.each(Object.entries(TARGETS))('to the %s', (_name, target) => {
      const gw = withGateway(
        { logLevel: 'SILENT', toolNamePrefix: 'conditional', streamReleaseAfterSeconds: RELEASE_AFTER_SECONDS },
        { kind, timeoutMs, targets: { only: target.start } },
      );

      if (target.form)
        it(`form mode (2025-06-18): the elicitation, then the result, with 0 s and ${THINK_SECONDS} s of think time`, async () => {
          const runs = await Promise.all(
            [0, THINK_SECONDS].map((think) => runSample('form_mode_2025.py', gw.url, think)),
          );
          for (const run of runs) {
            expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
            const lines = run.stdout.trim().split('\n');
            expect(lines).toHaveLength(2);
            expect(lines[0]).toBe('Form elicitation received: Run `aws s3 rm s3://my-bucket/important-file`?');
            expect(lines[1]).toMatch(FORM_RESULT);
          }
        }, 60_000);

      it(`URL mode (2025-11-25): the URL elicitation, the consent, then the result, with 0 s and ${THINK_SECONDS} s of think time`, async () => {
        const sessions = await Promise.all([existingSession(gw.url), existingSession(gw.url)]);
        const runs = await Promise.all(
          [0, THINK_SECONDS].map((think, i) => runSample('url_mode_2025.py', gw.url, think, sessions[i])),
        );
        for (const run of runs) {
          expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
          const lines = run.stdout.trim().split('\n');
          expect(lines[0]).toMatch(/^URL elicitation: /);
          expect(lines.at(-1)).toMatch(URL_RESULT);
        }
      }, 60_000);
    });
  });

  describe('with every call released (streamRelease "always")', () => {
    const gw = withGateway(
      { logLevel: 'SILENT', toolNamePrefix: 'conditional', streamRelease: 'always' },
      { targets: { only: () => startModernDemoTarget() } },
    );

    it('the URL-mode sample dies on the priming event its stream opens with (why a client not known to resume gets none)', async () => {
      const run = await runSample('url_mode_2025.py', gw.url, 0, await existingSession(gw.url));
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('json.decoder.JSONDecodeError');
      expect(run.stdout).toBe('');
    }, 60_000);
  });

  describe.each(['lambda runtime', 'web function'] as const)('past the function timeout (%s, 4 s)', (kind) => {
    const gw = withGateway(
      { logLevel: 'SILENT', toolNamePrefix: 'conditional' },
      { kind, timeoutMs: 4000, targets: { only: () => startModernDemoTarget() } },
    );

    it('a client that never reconnects sees its stream end cleanly, without the result (no hang, nothing it chokes on)', async () => {
      const run = await runSample('url_mode_2025.py', gw.url, 5, await existingSession(gw.url));
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/^URL elicitation: /);
      expect(run.stdout).not.toContain('Tool result');
    }, 60_000);
  });
});
