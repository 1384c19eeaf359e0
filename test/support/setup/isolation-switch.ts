import childProcess from 'node:child_process';
import net from 'node:net';

/**
 * The unit project's promise, kept by the process rather than by review: a unit test opens no socket
 * (not even on the loopback) and starts no process. What needs either belongs to the system project
 * (every test outside test/unit/).
 *
 * Jest hands every test file of a worker the same core modules, and one worker runs files of both
 * projects: the refusal a unit file switches on would outlive it into the next system file. So each
 * project's setup file sets the switch its own way, and the originals are kept on the shared module.
 */

const processFunctions = ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const;

type Originals = {
  connect: typeof net.Socket.prototype.connect;
  listen: typeof net.Server.prototype.listen;
  process: Record<(typeof processFunctions)[number], unknown>;
};

const ORIGINALS = Symbol.for('mcp-gateway.test.isolation-originals');
const holder = net as unknown as { [ORIGINALS]?: Originals };
const processModule = childProcess as unknown as Record<string, unknown>;

/** The functions as Node made them, taken the first time either switch runs in this worker. */
const originals = (): Originals => {
  holder[ORIGINALS] ??= {
    connect: net.Socket.prototype.connect,
    listen: net.Server.prototype.listen,
    process: Object.fromEntries(processFunctions.map((name) => [name, processModule[name]])) as Originals['process'],
  };
  return holder[ORIGINALS];
};

const refuse = (what: string) => () => {
  throw new Error(`a unit test ${what}: move it out of test/unit/ (the system project), or use an in-process fake`);
};

/** A unit test file: opening a socket or starting a process throws. */
export const refuseSocketsAndProcesses = (): void => {
  originals();
  net.Socket.prototype.connect = refuse('opens no socket') as unknown as typeof net.Socket.prototype.connect;
  net.Server.prototype.listen = refuse('listens on no socket') as unknown as typeof net.Server.prototype.listen;
  for (const name of processFunctions) processModule[name] = refuse('starts no process');
};

/** A system test file: sockets and processes as Node made them, whatever file ran before in the worker. */
export const allowSocketsAndProcesses = (): void => {
  const kept = originals();
  net.Socket.prototype.connect = kept.connect;
  net.Server.prototype.listen = kept.listen;
  for (const name of processFunctions) processModule[name] = kept.process[name];
};
