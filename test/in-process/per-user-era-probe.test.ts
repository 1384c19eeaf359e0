import { type ModernDemoTarget, startModernDemoTarget } from '../../examples/targets/modern-demo-target';
import { Envelope, LocalKeySource } from '../../lambda/connections/envelope';
import { ConnectionVault } from '../../lambda/connections/vault';
import { systemClock } from '../../lambda/scheduling/clock';
import type { StoredConnection } from '../../lambda/state/connection-table';
import { inProcessGateway } from '../support/in-process';
import { eventually, readMessage } from '../support/mcp-http';
import { MemoryConnectionTable } from '../support/memory-connection-table';

/**
 * A per-user target's era is learned once per instance by one probe that every request waiting for it
 * shares, and the probe runs as whoever asked first. When that caller has no connection, the probe
 * fails for it alone: a caller with its own connection, waiting on the same probe, probes again as
 * itself and is served, not asked to connect.
 */

const KEY = 'a-local-vault-key-of-at-least-32-characters';

/** The table, with the reads of one principal's connection held at will. */
class GatedTable extends MemoryConnectionTable {
  private gate?: Promise<void>;
  private open?: () => void;
  held = 0;
  readsBy = new Map<string, number>();

  holdNextRead(): void {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
  }

  release(): void {
    this.open?.();
  }

  override async read(principal: string, target: string): Promise<StoredConnection | undefined> {
    const count = (this.readsBy.get(principal) ?? 0) + 1;
    this.readsBy.set(principal, count);
    const gate = this.gate;
    if (gate && principal === 'arn:alice' && count === 1) {
      this.held++;
      await gate;
    }
    return super.read(principal, target);
  }
}

async function until(check: () => boolean): Promise<void> {
  await eventually(() => expect(check()).toBe(true));
}

describe('the shared era probe of a per-user target', () => {
  let target: ModernDemoTarget;
  beforeAll(async () => {
    target = await startModernDemoTarget();
  });
  afterAll(() => target.close());

  it('does not send a connected caller to consent because the first caller was not connected', async () => {
    const table = new GatedTable();
    const gateway = inProcessGateway(
      {
        targets: [{ name: 'docs', url: target.url, userOAuth: { authorizationServer: 'http://127.0.0.1:9' } }],
        connections: { localKey: KEY },
      },
      { connectionTable: table },
    );
    const vault = new ConnectionVault(table, new Envelope(new LocalKeySource(KEY)), {
      idleDays: 1,
      clock: systemClock,
    });
    await vault.put('arn:bob', 'docs', { accessToken: 'bob-token', connectedAt: Date.now() });

    // 2026-07-28 calls: the gateway learns a target's era for them with one shared `server/discover`.
    const call = (principal: string) =>
      gateway
        .post(
          { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'docs___echo' },
          {
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: {
              name: 'docs___echo',
              arguments: { text: 'hi' },
              _meta: {
                'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } },
              },
            },
          },
          { platformPrincipal: principal },
        )
        .then(readMessage);

    // Who asks for the target's era verdict (the shared probe is joined there).
    const verdicts = jest.spyOn(gateway.deps.targets.eras, 'modernVerdict');
    table.holdNextRead();
    const aliceCall = call('arn:alice');
    await until(() => table.held === 1); // alice's probe is under way, waiting for her (absent) connection
    const asked = verdicts.mock.calls.length;
    const bobCall = call('arn:bob');
    await until(() => verdicts.mock.calls.length > asked); // bob's call waits on the same probe
    expect(table.readsBy.get('arn:bob')).toBeUndefined(); // it has not been asked as bob yet
    table.release();

    const [aliceAnswer, bobAnswer] = await Promise.all([aliceCall, bobCall]);
    expect(aliceAnswer.result.resultType).toBe('input_required'); // asked to connect
    expect(aliceAnswer.result.inputRequests.url_0.params.mode).toBe('url');
    expect(bobAnswer.result.content[0].text).toMatch(/hi/); // served as bob
    expect(table.readsBy.get('arn:bob')).toBeGreaterThan(0);
  });
});
