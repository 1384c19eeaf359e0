/**
 * What the largest accepted `subscriptions/listen` costs an `npm start` gateway process in memory
 * (a one-off measurement, not a timed test; the figures are in docs/performance.md):
 *
 *   npx tsx bench/listen-memory.ts                          # 1 and 10 listens of 100 URIs (the defaults)
 *   LISTEN_URI_LENGTH=8000 npx tsx bench/listen-memory.ts   # the longest URIs a listen takes (800 KB per listen)
 *   LISTEN_URIS=10000 npx tsx bench/listen-memory.ts        # the setting's maximum, against a target with that many resources
 *
 * The gateway runs as its own process on dynalite, with one 2026-07-28 target (an official v2 SDK
 * server in this process) that lists LISTEN_URIS resources and acknowledges resource subscriptions. A
 * warm-up listen first (code loaded, the listing cached), then the process's VmRSS (median
 * of 5 readings) before, with 1 listen open, and with `maxListensPerPrincipal` (10) listens of the one
 * principal open, each naming LISTEN_URIS URIs that the target serves; VmHWM is the peak resident set.
 */
import { readFileSync } from 'node:fs';
import { startCountedDynamo } from '../test/support/dynamo';
import { startGatewayProcess } from '../test/support/gateway-process';
import { type OpenedListen, openListen } from '../test/support/listen-client';
import { startV2ResourcesServer } from '../test/support/servers/v2-resources-server';

const URIS = Number(process.env.LISTEN_URIS ?? 100);
const URI_LENGTH = process.env.LISTEN_URI_LENGTH ? Number(process.env.LISTEN_URI_LENGTH) : undefined;
const LISTENS = 10;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const line = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1]) / 1024;
}

async function rss(pid: number): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    readings.push(status(pid, 'VmRSS'));
    await sleep(200);
  }
  return readings.sort((a, b) => a - b)[2]!;
}

async function main(): Promise<void> {
  const dynamo = await startCountedDynamo();
  const target = await startV2ResourcesServer({ scheme: 'demo', count: URIS, uriLength: URI_LENGTH });
  const gateway = await startGatewayProcess(
    {
      logLevel: 'SILENT',
      requestStateKeys: { current: 'bench-key-0123456789abcdefghijklmnopqrstuvwxyz' },
      targets: [{ name: 'demo', url: target.url, era: 'modern' }],
      maxResourceSubscriptionsPerListen: Math.max(URIS, 100),
    },
    dynamo.endpoint,
  );
  const pid = gateway.child.pid!;
  const uris = Array.from({ length: URIS }, (_, i) => target.uri(i));
  /** Listens whose target did not acknowledge in time (the gateway waits 1 s): left out of the figures' meaning. */
  const unacknowledged: string[] = [];
  const open = async (id: string): Promise<OpenedListen> => {
    const opened = await openListen(gateway.url, id, { resourceSubscriptions: uris }, AbortSignal.timeout(60_000));
    const acknowledged = opened.first?.params?.notifications?.resourceSubscriptions?.length;
    if (opened.first?.method !== 'notifications/subscriptions/acknowledged')
      throw new Error(`listen ${id}: ${JSON.stringify(opened.first).slice(0, 300)}`);
    if (acknowledged !== URIS) unacknowledged.push(id);
    return opened;
  };
  try {
    (await open('warm-up')).close();
    await sleep(1000);
    const before = await rss(pid);
    const listed = () => target.stats().modern.requestsByMethod['resources/list'] ?? 0;
    const listedBefore = listed();
    const one = await open('one');
    const withOne = await rss(pid);
    const more = await Promise.all(Array.from({ length: LISTENS - 1 }, (_, i) => open(`more-${i}`)));
    const withAll = await rss(pid);
    const peak = status(pid, 'VmHWM');
    for (const listen of [one, ...more]) listen.close();
    const body = JSON.stringify({ resourceSubscriptions: uris }).length;
    const mb = (x: number) => `${x.toFixed(1)} MB`;
    console.log(`listen of ${URIS} URIs (${(body / 1024).toFixed(1)} KB of URIs), gateway pid ${pid}`);
    console.log(`VmRSS before:                ${mb(before)}`);
    console.log(`VmRSS with 1 listen open:    ${mb(withOne)} (+${mb(withOne - before)})`);
    console.log(`VmRSS with ${LISTENS} listens open:  ${mb(withAll)} (+${mb(withAll - before)})`);
    console.log(`VmHWM (peak, whole run):     ${mb(peak)}`);
    console.log(`resources/list at the target for those ${LISTENS} listens: ${listed() - listedBefore}`);
    if (unacknowledged.length) console.log(`not acknowledged by the target within 1 s: ${unacknowledged.join(', ')}`);
  } finally {
    await gateway.stop('SIGKILL');
    await target.close();
    await dynamo.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
