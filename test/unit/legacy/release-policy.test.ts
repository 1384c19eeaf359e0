import { GatewayConfigSchema } from '../../../lambda/config/schema';
import {
  decideCarriedRelease,
  decideRelease,
  matchesClient,
  needsResumeProof,
  type ReleasePolicy,
  releasePolicy,
  resumeProofKey,
} from '../../../lambda/legacy/release-policy';

/**
 * Which calls of a 2025 session are released, and when (legacy/release-policy.ts): only a client
 * trusted to resume gets a priming event and an early release; every other client is held on its
 * open stream and released only just before the invocation would be cut.
 */

const policy = (overrides: Partial<ReleasePolicy> = {}): ReleasePolicy => ({
  mode: 'proven',
  afterMs: 2000,
  retryMs: 2000,
  excludeClients: ['never-resumes'],
  resumingClients: [{ name: 'mcp-remote', version: '>=0.1.16' }],
  proofSeconds: 86_400,
  ...overrides,
});

const session = (
  name: string,
  version = '1.0.0',
  extra: { clientResumes?: boolean; protocolVersion?: string } = {},
) => ({
  protocolVersion: extra.protocolVersion ?? '2025-11-25',
  clientInfo: { name, version },
  clientResumes: extra.clientResumes,
});

describe('the release decision of a call', () => {
  it.each([
    [
      'an unknown client, proven mode: held, released only at the deadline',
      policy(),
      session('my-agent'),
      { prime: false, early: false, atDeadline: true },
    ],
    [
      'a client seen resuming: released early',
      policy(),
      session('my-agent', '1.0.0', { clientResumes: true }),
      { prime: true, early: true, atDeadline: true },
    ],
    [
      'an allowlisted client: released early',
      policy(),
      session('mcp-remote', '0.1.29'),
      { prime: true, early: true, atDeadline: true },
    ],
    [
      'an allowlisted name below its version: held',
      policy(),
      session('mcp-remote', '0.1.15'),
      { prime: false, early: false, atDeadline: true },
    ],
    [
      'always: every client released early',
      policy({ mode: 'always' }),
      session('my-agent'),
      { prime: true, early: true, atDeadline: true },
    ],
    [
      'never: nobody released, not even at the deadline (a client seen resuming still primed)',
      policy({ mode: 'never' }),
      session('my-agent', '1', { clientResumes: true }),
      { prime: true, early: false, atDeadline: false },
    ],
    [
      'an excluded client: never released, even when seen resuming',
      policy({ mode: 'always' }),
      session('never-resumes', '1', { clientResumes: true }),
      { prime: false, early: false, atDeadline: false },
    ],
    [
      '2025-06-18 (no SSE polling): held',
      policy({ mode: 'always' }),
      session('my-agent', '1', { protocolVersion: '2025-06-18' }),
      { prime: false, early: false, atDeadline: false },
    ],
    [
      '2025-03-26: held',
      policy({ mode: 'always' }),
      session('my-agent', '1', { protocolVersion: '2025-03-26' }),
      { prime: false, early: false, atDeadline: false },
    ],
  ])('%s', (_, settings, facts, expected) => {
    expect(decideRelease(settings, facts)).toEqual(expected);
  });

  it('looks a client up among those seen resuming only when that would change the decision', () => {
    expect(needsResumeProof(policy(), session('my-agent'))).toBe(true);
    expect(needsResumeProof(policy(), session('mcp-remote', '1.0.0'))).toBe(false);
    expect(needsResumeProof(policy({ mode: 'always' }), session('my-agent'))).toBe(false);
    expect(needsResumeProof(policy(), session('never-resumes'))).toBe(false);
    expect(
      needsResumeProof(policy(), { protocolVersion: '2025-11-25', clientInfo: undefined, clientResumes: undefined }),
    ).toBe(false);
  });
});

describe('the decision a call carries (made once, applied by every instance that holds it)', () => {
  it('is, for a client not yet seen resuming, held now and released early once its reconnect took the call over', () => {
    expect(decideCarriedRelease(policy(), session('some-client'))).toEqual({
      now: { prime: false, early: false, atDeadline: true },
      onceResumed: { prime: true, early: true, atDeadline: true },
    });
  });

  it('never releases an excluded client or a session without SSE polling, even once it resumed', () => {
    const held = { prime: false, early: false, atDeadline: false };
    expect(decideCarriedRelease(policy(), session('never-resumes'))).toEqual({ now: held, onceResumed: held });
    expect(decideCarriedRelease(policy(), session('x', '1.0.0', { protocolVersion: '2025-06-18' }))).toEqual({
      now: held,
      onceResumed: held,
    });
  });

  it('under never, primes a client that resumes but releases nothing early', () => {
    const carried = decideCarriedRelease(policy({ mode: 'never' }), session('some-client'));
    expect(carried.onceResumed).toEqual({ prime: true, early: false, atDeadline: false });
  });
});

describe('client patterns', () => {
  it.each([
    [{ name: 'mcp-remote' }, { name: 'mcp-remote', version: 'anything' }, true],
    [{ name: 'mcp-remote' }, { name: 'mcp-remote-fork', version: '1' }, false],
    [{ name: 'inspector-*' }, { name: 'inspector-client', version: '1' }, true],
    [{ name: 'a.b' }, { name: 'aXb', version: '1' }, false],
    [{ name: 'x', version: '1.*' }, { name: 'x', version: '1.4.2' }, true],
    [{ name: 'x', version: '1.*' }, { name: 'x', version: '2.0.0' }, false],
    [{ name: 'x', version: '>=1.23' }, { name: 'x', version: '1.23.0' }, true],
    [{ name: 'x', version: '>=1.23' }, { name: 'x', version: '1.100.1' }, true],
    [{ name: 'x', version: '>=1.23' }, { name: 'x', version: '1.9.9' }, false],
    [{ name: 'x', version: '>=1.23' }, { name: 'x', version: '2' }, true],
    [{ name: 'x', version: '>=1.23' }, { name: 'x', version: '1.24.0-beta.1' }, false],
    [{ name: 'x', version: '>=1.23' }, { name: 'x', version: '' }, false],
  ])('%j matches %j: %s', (pattern, info, expected) => {
    expect(matchesClient(pattern, info)).toBe(expected);
  });
});

describe('the configuration', () => {
  const parse = (raw: Record<string, unknown>) => releasePolicy(GatewayConfigSchema.parse(raw));

  it('defaults to proven', () => {
    expect(parse({}).mode).toBe('proven');
  });

  it('reads the booleans of earlier releases: true is always, false is never', () => {
    expect(parse({ streamRelease: true }).mode).toBe('always');
    expect(parse({ streamRelease: false }).mode).toBe('never');
  });

  it('refuses an unknown mode and a malformed version pattern, naming the field', () => {
    expect(GatewayConfigSchema.safeParse({ streamRelease: 'sometimes' }).success).toBe(false);
    const bad = GatewayConfigSchema.safeParse({ streamReleaseClients: [{ name: 'x', version: '<2' }] });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues[0]?.path)).toContain('streamReleaseClients');
  });

  it('keeps a client proven for streamReleaseProofDays', () => {
    expect(parse({ streamReleaseProofDays: 7 }).proofSeconds).toBe(7 * 86_400);
  });
});

describe('the record of a client seen resuming', () => {
  it('is keyed by principal and clientInfo, with neither readable in the key', () => {
    const key = resumeProofKey('https://idp.example#alice', { name: 'my-agent', version: '1.0.0' });
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(key).not.toContain('alice');
    expect(resumeProofKey('https://idp.example#bob', { name: 'my-agent', version: '1.0.0' })).not.toBe(key);
    expect(resumeProofKey('https://idp.example#alice', { name: 'my-agent', version: '1.0.1' })).not.toBe(key);
  });
});
