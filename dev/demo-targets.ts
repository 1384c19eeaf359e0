import { startDemoTarget } from '../examples/targets/demo-target';
import { startModernDemoTarget } from '../examples/targets/modern-demo-target';

/**
 * The two built-in demo targets of `npm start`: `demo` (2025-11-25, v1 SDK) and `demo-modern`
 * (2026-07-28, v2 SDK). Each is started in this process, or, given a URL, an already running one is
 * used, so that two local gateway processes can share one target (a target session opened through
 * one process must be the same target the other process reaches).
 */

export interface DemoTargetChoice {
  /** Use the target already running at this URL instead of starting one. */
  url?: string;
  /** Port to start it on; default 0 (a free one). */
  port?: number;
  /** When `port` is in use, start on a free one instead of failing (for default ports, not chosen ones). */
  fallbackToFreePort?: boolean;
}

export interface DemoTargetsOptions {
  demo?: DemoTargetChoice;
  demoModern?: DemoTargetChoice;
}

export interface RunningDemoTarget {
  name: 'demo' | 'demo-modern';
  url: string;
  era: '2025-11-25' | '2026-07-28';
  /** Started by this process (not given by URL). */
  startedHere: boolean;
  /** Set when the chosen port was in use and a free one was taken. */
  movedFrom?: number;
}

export interface DemoTargets {
  running: RunningDemoTarget[];
  /** As configuration entries. */
  targets: Array<{ name: string; url: string }>;
  close(): Promise<void>;
}

interface Started {
  url: string;
  close(): Promise<void>;
}

export async function startDemoTargets(options: DemoTargetsOptions = {}): Promise<DemoTargets> {
  const closers: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  const one = async (
    name: RunningDemoTarget['name'],
    era: RunningDemoTarget['era'],
    choice: DemoTargetChoice,
    start: (port: number) => Promise<Started>,
  ): Promise<RunningDemoTarget> => {
    if (choice.url) return { name, era, url: choice.url, startedHere: false };
    const port = choice.port ?? 0;
    let started: Started;
    let movedFrom: number | undefined;
    try {
      started = await start(port);
    } catch (error) {
      if (!(choice.fallbackToFreePort && port !== 0 && isAddressInUse(error))) throw error;
      started = await start(0);
      movedFrom = port;
    }
    closers.push(started.close);
    return { name, era, url: started.url, startedHere: true, movedFrom };
  };
  try {
    const running = [
      await one('demo', '2025-11-25', options.demo ?? {}, (port) => startDemoTarget({ port })),
      await one('demo-modern', '2026-07-28', options.demoModern ?? {}, (port) => startModernDemoTarget({ port })),
    ];
    return { running, targets: running.map(({ name, url }) => ({ name, url })), close };
  } catch (error) {
    await close();
    throw error;
  }
}

export function isAddressInUse(error: unknown): error is NodeJS.ErrnoException & { port?: number } {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE';
}
