import { exposedName, overlongNames, resolveName, shouldPrefix } from '../../lambda/catalog/naming';
import { matchesTemplate } from '../../lambda/catalog/uri-template';
import { parseConfig } from '../../lambda/config/schema';
import { parseAccept } from '../../lambda/http/responses';
import { targetCallIdOf } from '../../lambda/legacy/ids';
import {
  capabilitiesForLegacyTarget as capabilitiesForTarget,
  clientAccepts,
  elicitationModes,
} from '../../lambda/protocol/capabilities';
import { parseClientMessage } from '../../lambda/protocol/jsonrpc';

describe('configuration', () => {
  it('fills every default', () => {
    expect(parseConfig({})).toMatchObject({
      targets: [],
      toolNamePrefix: 'always',
      sessionTimeoutSeconds: 3600,
      pendingRequestTimeoutSeconds: 300,
      supportedVersions: ['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'],
      tableName: 'mcp-gateway',
      logLevel: 'INFO',
      auth: { type: 'none' },
      maxBodyBytes: 4194304,
    });
  });

  it.each([
    [{ targets: [{ name: 'a_b', url: 'http://x/mcp' }] }, 'targets.0.name'],
    [{ targets: [{ name: 'a', url: 'ftp://x' }] }, 'targets.0.url'],
    [
      {
        targets: [
          { name: 'a', url: 'http://x' },
          { name: 'a', url: 'http://y' },
        ],
      },
      'targets.1.name: duplicate target name',
    ],
    [{ sessionTimeoutSeconds: 899 }, 'sessionTimeoutSeconds'],
    [{ sessionTimeoutSeconds: 28801 }, 'sessionTimeoutSeconds'],
    [{ toolNamePrefix: 'sometimes' }, 'toolNamePrefix'],
    [{ supportedVersions: ['1999-01-01'] }, 'supportedVersions.0'],
    [{ auth: { type: 'magic' } }, 'auth.type'],
    [{ tagets: [] }, 'tagets: Unrecognized key'],
  ])('names the offending field of %j', (raw, field) => {
    expect(() => parseConfig(raw)).toThrow(field);
  });
});

describe('JSON-RPC parsing', () => {
  it.each([
    ['{"jsonrpc":"2.0","id":1,"method":"ping"}', 'request'],
    ['{"jsonrpc":"2.0","method":"notifications/initialized"}', 'notification'],
    ['{"jsonrpc":"2.0","id":"gw-1","result":{"action":"accept"}}', 'response'],
    ['{"jsonrpc":"2.0","id":"gw-1","error":{"code":-1,"message":"no"}}', 'response'],
  ])('classifies %s as a %s', (text, kind) => {
    const parsed = parseClientMessage(text);
    expect(parsed.ok && parsed.value.kind).toBe(kind);
  });

  it.each([
    ['not json', -32700],
    ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600],
    ['{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600],
    ['{"jsonrpc":"2.0"}', -32600],
    ['null', -32600],
  ])('refuses %s with %d', (text, code) => {
    const parsed = parseClientMessage(text);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.code).toBe(code);
  });
});

describe('Accept', () => {
  it('treats a missing header and */* as both, and SSE-only as SSE-only', () => {
    expect(parseAccept(null)).toEqual({ json: true, sse: true });
    expect(parseAccept('*/*')).toEqual({ json: true, sse: true });
    expect(parseAccept('text/event-stream')).toEqual({ json: false, sse: true });
    expect(parseAccept('application/json;q=0.9, text/event-stream')).toEqual({ json: true, sse: true });
  });
});

describe('capabilities declared to a target', () => {
  const everything = {
    elicitation: { form: {}, url: {} },
    sampling: { tools: {}, context: {} },
    roots: { listChanged: true },
    experimental: { x: {} },
  };

  it('passes on only what the client declared and the version allows', () => {
    expect(capabilitiesForTarget(everything, '2025-11-25')).toEqual({
      elicitation: { form: {}, url: {} },
      sampling: { context: {}, tools: {} },
      roots: { listChanged: true },
    });
    expect(capabilitiesForTarget(everything, '2025-06-18')).toEqual({
      elicitation: { form: {} },
      sampling: { context: {} },
      roots: { listChanged: true },
    });
    // Elicitation arrived in 2025-06-18 (the reference page says 2025-03-26; the specification wins).
    expect(capabilitiesForTarget(everything, '2025-03-26')).toEqual({
      sampling: { context: {} },
      roots: { listChanged: true },
    });
    expect(capabilitiesForTarget(everything, '2024-11-05')).toEqual({
      sampling: { context: {} },
      roots: { listChanged: true },
    });
    expect(capabilitiesForTarget({}, '2025-11-25')).toEqual({});
  });

  it('reads `elicitation: {}` as form only', () => {
    expect(elicitationModes({ elicitation: {} })).toEqual({ form: true, url: false });
    expect(elicitationModes({ elicitation: { url: {} } })).toEqual({ form: false, url: true });
  });

  it('relays a server request only when the client can take it', () => {
    expect(clientAccepts({ elicitation: {} }, 'elicitation/create', { message: 'x' })).toBe(true);
    expect(clientAccepts({ elicitation: {} }, 'elicitation/create', { mode: 'url' })).toBe(false);
    expect(clientAccepts({ sampling: {} }, 'sampling/createMessage', { tools: [] })).toBe(false);
    expect(clientAccepts({ sampling: { tools: {} } }, 'sampling/createMessage', { tools: [] })).toBe(true);
    expect(clientAccepts({}, 'roots/list', undefined)).toBe(false);
    expect(clientAccepts(everything, 'tasks/get', undefined)).toBe(false);
  });
});

describe('naming and routing', () => {
  const entries = [
    { target: 'github', name: 'search' },
    { target: 'jira', name: 'search' },
    { target: 'aws', name: 'use_aws' },
  ];
  const targets = ['github', 'jira', 'aws'];

  it('prefixes by mode', () => {
    expect(shouldPrefix('always', 1)).toBe(true);
    expect(shouldPrefix('conditional', 1)).toBe(false);
    expect(shouldPrefix('conditional', 2)).toBe(true);
    expect(shouldPrefix('never', 5)).toBe(false);
    expect(exposedName('aws', 'use_aws', true)).toBe('aws___use_aws');
  });

  it('accepts a prefixed name, and a bare name exactly one target has', () => {
    expect(resolveName('jira___search', entries, targets, 'tool')).toEqual({
      ok: true,
      target: 'jira',
      name: 'search',
    });
    expect(resolveName('use_aws', entries, targets, 'tool')).toEqual({ ok: true, target: 'aws', name: 'use_aws' });
  });

  it('refuses an ambiguous or unknown name, naming candidates', () => {
    expect(resolveName('search', entries, targets, 'tool')).toMatchObject({
      ok: false,
      candidates: ['github___search', 'jira___search'],
    });
    expect(resolveName('github___nope', entries, targets, 'tool')).toMatchObject({ ok: false });
  });

  it('reports exposed names over 64 characters', () => {
    expect(
      overlongNames(
        [
          { target: 't'.repeat(60), name: 'echo' },
          { target: 'a', name: 'b' },
        ],
        true,
      ),
    ).toEqual([`${'t'.repeat(60)}___echo`]);
  });

  it('matches resource templates for routing', () => {
    expect(matchesTemplate('demo://items/{id}', 'demo://items/7')).toBe(true);
    expect(matchesTemplate('demo://items/{id}', 'demo://items/7/x')).toBe(false);
    expect(matchesTemplate('file:///{+path}', 'file:///a/b/c')).toBe(true);
    expect(matchesTemplate('search://q{?term}', 'search://q?term=x')).toBe(true);
  });

  it('derives upstream ids that keep number and string ids apart', () => {
    expect(targetCallIdOf(1)).toBe('c.n.1');
    expect(targetCallIdOf('1')).toBe('c.s.1');
  });
});
