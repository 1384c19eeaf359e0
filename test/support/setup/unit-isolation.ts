import childProcess from 'node:child_process';
import net from 'node:net';

/**
 * The unit project's promise, kept by the process rather than by review: a unit test opens no socket
 * (not even on the loopback) and starts no process. What needs either belongs to the system project
 * (every test outside test/unit/). Loaded before each unit test file (jest `setupFiles`).
 */

const refuse = (what: string) => () => {
  throw new Error(`a unit test ${what}: move it out of test/unit/ (the system project), or use an in-process fake`);
};

net.Socket.prototype.connect = refuse('opens no socket') as unknown as typeof net.Socket.prototype.connect;
net.Server.prototype.listen = refuse('listens on no socket') as unknown as typeof net.Server.prototype.listen;
for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
  (childProcess as unknown as Record<string, unknown>)[name] = refuse('starts no process');
}
