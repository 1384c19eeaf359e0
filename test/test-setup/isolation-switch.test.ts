import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { allowSocketsAndProcesses, refuseSocketsAndProcesses } from '../support/setup/isolation-switch';

/**
 * The unit project's refusal of sockets and processes ends with the unit file: one jest worker runs
 * files of both projects on the same core modules, so a system file that follows a unit file must get
 * them back as Node made them.
 */

// The jest configuration, as jest reads it (CommonJS, outside the TypeScript project).
const config = require('../../jest.config.js') as { projects: { displayName: string; setupFiles?: string[] }[] };

const listenOnLoopback = () =>
  new Promise<net.Server>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });

afterEach(() => allowSocketsAndProcesses());

test('after a unit file refused them, the system switch gives sockets and processes back', async () => {
  refuseSocketsAndProcesses();
  expect(() => net.createServer().listen(0, '127.0.0.1')).toThrow(/listens on no socket/);
  expect(() => execFileSync('true')).toThrow(/starts no process/);

  allowSocketsAndProcesses();
  const server = await listenOnLoopback();
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.end();
      resolve();
    });
    socket.once('error', reject);
  });
  server.close();
  expect(execFileSync('node', ['-e', 'process.stdout.write("ran")']).toString()).toBe('ran');
});

test('refusing twice and allowing once still restores what Node made, not the refusal', async () => {
  refuseSocketsAndProcesses();
  refuseSocketsAndProcesses();
  allowSocketsAndProcesses();
  (await listenOnLoopback()).close();
});

test('each project loads its own switch before every test file', () => {
  const setupOf = (name: string) => config.projects.find((p) => p.displayName === name)?.setupFiles ?? [];
  expect(setupOf('unit')).toEqual(['<rootDir>/test/support/setup/unit-isolation.ts']);
  expect(setupOf('system')[0]).toBe('<rootDir>/test/support/setup/system-allowance.ts');
  expect(setupOf('system')).toContain('<rootDir>/test/support/setup/sdk-client-close.ts');
});
