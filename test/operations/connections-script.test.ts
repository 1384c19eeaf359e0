import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { systemClock } from '../../lambda/scheduling/clock';
import { DynamoConnectionTable } from '../../lambda/state/dynamo/connections';
import { DynamoTable } from '../../lambda/state/dynamo/table';
import { createDocumentClient, ensureTable } from '../../lambda/state/dynamo-client';
import { runConnections } from '../../scripts/connections';
import { type CountedDynamo, startCountedDynamo } from '../support/dynamo';

/**
 * `npm run connections` (scripts/connections.ts), the operator's revocation, against dynalite: the
 * connections are written as the gateway writes them (DynamoConnectionTable), and the script must find
 * and remove exactly the named principal's, leave everyone else's and the table's other items alone,
 * and never print what is encrypted.
 */

const TABLE = 'mcp-gateway';
const ALICE = 'https://id.example.com/#alice';
const BOB = 'https://id.example.com/#bob';

describe('npm run connections', () => {
  let dynamo: CountedDynamo;
  let table: DynamoConnectionTable;
  /** Every ciphertext and wrapped key written: none may ever be printed. */
  const secrets: string[] = [];

  const write = async (principal: string, target: string) => {
    const ciphertext = `ciphertext-${randomBytes(12).toString('base64url')}`;
    const wrappedKey = `wrapped-${randomBytes(12).toString('base64url')}`;
    secrets.push(ciphertext, wrappedKey);
    await table.write(
      principal,
      target,
      { ciphertext, wrappedKey, keyId: 'local:k1', updatedAt: Date.UTC(2026, 0, 2, 3, 4, 5) },
      Math.floor(Date.UTC(2026, 3, 2) / 1000),
    );
  };

  /** Runs the script in this process; its output, line by line. */
  const run = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const status = await runConnections(
      [...argv, '--endpoint', dynamo.endpoint],
      (line) => out.push(line),
      (line) => err.push(line),
    );
    const printed = [...out, ...err].join('\n');
    for (const secret of secrets) expect(printed).not.toContain(secret);
    return { status, out, err };
  };

  const stored = async (principal: string, targets: string[]) =>
    (await Promise.all(targets.map(async (t) => ((await table.read(principal, t)) ? t : undefined)))).filter(Boolean);

  beforeAll(async () => {
    dynamo = await startCountedDynamo();
    const client = createDocumentClient({ endpoint: dynamo.endpoint });
    await ensureTable(client, TABLE);
    table = new DynamoConnectionTable(new DynamoTable(client, TABLE, { clock: systemClock }));
    for (const target of ['docs', 'tickets', 'wiki']) await write(ALICE, target);
    await write(BOB, 'docs');
    // Items of other kinds in the same table: a used consent-link value and a client registration.
    await table.useOnce('depart:some-nonce', Math.floor(Date.now() / 1000) + 600);
    await table.keepRegistration('docs', 'https://as.example.com', 'sealed-registration');
  });
  afterAll(async () => {
    await dynamo?.close();
  });

  it('lists one principal’s connections: targets, times and key ids, never the ciphertext', async () => {
    dynamo.reset();
    const listed = await run('list', '--principal', ALICE);
    expect(listed.status).toBe(0);
    // What is encrypted is not even read: the query projects names, times and key ids.
    expect(dynamo.requests.map((r) => [r.operation, JSON.parse(r.body).ProjectionExpression])).toEqual([
      ['Query', 'sk, updatedAt, expiresAt, keyId'],
    ]);
    expect(listed.out[0]).toBe(`${ALICE}: 3 connections (table ${TABLE} at ${dynamo.endpoint})`);
    expect(listed.out.slice(1).map((line) => line.trim().split(/\s+/)[0])).toEqual(['docs', 'tickets', 'wiki']);
    expect(listed.out[1]).toContain('written 2026-01-02T03:04:05.000Z');
    expect(listed.out[1]).toContain('expires unused 2026-04-02T00:00:00.000Z');

    const json = await run('list', '--principal', ALICE, '--json');
    expect(JSON.parse(json.out.join('\n'))).toEqual({
      principal: ALICE,
      connections: ['docs', 'tickets', 'wiki'].map((target) => ({
        target,
        updatedAt: '2026-01-02T03:04:05.000Z',
        expiresAt: '2026-04-02T00:00:00.000Z',
        keyId: 'local:k1',
      })),
    });
  });

  it('removes one target of one principal, then all of the principal’s, and nothing else', async () => {
    const one = await run('remove', '--principal', ALICE, '--target', 'tickets');
    expect(one.status).toBe(0);
    expect(one.out[0]).toBe(`${ALICE}: removed tickets (table ${TABLE} at ${dynamo.endpoint})`);
    expect(await stored(ALICE, ['docs', 'tickets', 'wiki'])).toEqual(['docs', 'wiki']);
    expect(await stored(BOB, ['docs'])).toEqual(['docs']);

    const all = await run('remove', '--principal', ALICE, '--json');
    expect(JSON.parse(all.out.join('\n'))).toEqual({ principal: ALICE, removed: ['docs', 'wiki'] });
    expect(await stored(ALICE, ['docs', 'tickets', 'wiki'])).toEqual([]);
    expect(await table.targetsOf(ALICE)).toEqual([]);

    // Bob's connection and the other items are untouched.
    expect(await table.targetsOf(BOB)).toEqual(['docs']);
    expect(await table.readRegistration('docs', 'https://as.example.com')).toBe('sealed-registration');
    expect(await table.useOnce('depart:some-nonce', Math.floor(Date.now() / 1000) + 600)).toBe(false);

    const again = await run('remove', '--principal', ALICE);
    expect(again.status).toBe(0);
    expect(again.out[0]).toBe(`${ALICE}: no connections to remove (table ${TABLE} at ${dynamo.endpoint})`);
  });

  it('refuses a bad command line (2) and reports a table it cannot use (1)', async () => {
    expect((await run('list')).status).toBe(2);
    expect((await run('remove', '--target', 'docs')).status).toBe(2);
    expect((await run('list', '--principal', BOB, '--target', 'docs')).status).toBe(2);
    expect((await run('purge', '--principal', BOB)).status).toBe(2);
    const missing = await run('list', '--principal', BOB, '--table', 'no-such-table');
    expect(missing.status).toBe(1);
    expect(missing.err.join('\n')).toMatch(/ResourceNotFoundException.*TableName/);
  });

  it('runs as a command (npm run connections)', async () => {
    await write(BOB, 'wiki');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'scripts/connections.ts', 'list', '--principal', BOB, '--endpoint', dynamo.endpoint],
      { cwd: join(__dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const status = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`npm run connections did not finish: ${stdout}${stderr}`));
      }, 30_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
    expect(stdout.split('\n')[0]).toBe(`${BOB}: 2 connections (table ${TABLE} at ${dynamo.endpoint})`);
    for (const secret of secrets) expect(stdout).not.toContain(secret);
  });
});
