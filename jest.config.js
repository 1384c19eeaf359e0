// Tests run on the developer's Node 20; the AWS SDK's notice about its Node 22 requirement is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** What both projects share: TypeScript through ts-jest, and the ESM-only packages compiled for jest. */
const common = {
  testEnvironment: 'node',
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // jose 6 (JWT verification) and @modelcontextprotocol/ext-tasks (the Tasks extension's client and
    // schemas) are ESM-only and jest runs CommonJS: compile their files to CommonJS too.
    '/node_modules/(jose|@modelcontextprotocol/ext-tasks)/.+\\.js$': [
      'ts-jest',
      { tsconfig: { allowJs: true, module: 'commonjs', target: 'ES2022' } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/|@modelcontextprotocol/ext-tasks/)'],
  // ext-tasks exports its entry points for `import` only, which jest's CommonJS resolution does not match.
  moduleNameMapper: {
    '^@modelcontextprotocol/ext-tasks/(core|core/v1|core/v2|client|receiver)$':
      '<rootDir>/node_modules/@modelcontextprotocol/ext-tasks/dist/$1/index.js',
  },
};

/** @type {import('jest').Config} */
module.exports = {
  // Two axes: `unit` (test/unit/: no process, no socket, a fake clock where time matters; what
  // `npm run test:fast` runs) and `system` (everything else: processes, dynalite, real SDK servers and
  // clients, Chromium). `jest --selectProjects unit` runs one.
  projects: [
    {
      ...common,
      displayName: 'unit',
      roots: ['<rootDir>/test/unit'],
      setupFiles: ['<rootDir>/test/support/setup/unit-isolation.ts'],
    },
    {
      ...common,
      displayName: 'system',
      roots: ['<rootDir>/test'],
      testPathIgnorePatterns: ['/test/unit/'],
      // One worker runs files of both projects, sharing Node's core modules: undo the unit refusal.
      setupFiles: [
        '<rootDir>/test/support/setup/system-allowance.ts',
        '<rootDir>/test/support/setup/sdk-client-close.ts',
      ],
    },
  ],
  testTimeout: 30000,
  // A run that leaves out tests for want of Chromium, openssl or the Python clients' environment says
  // which, with the command that installs it, first and last (test/support/prerequisites.ts).
  globalSetup: '<rootDir>/test/support/setup/jest-global-setup.ts',
  globalTeardown: '<rootDir>/test/support/setup/jest-global-teardown.ts',
  // Four workers on a 2-core machine: most files wait on loopback servers, clients' think times and
  // emulated Lambda environments, so two left half the CPU idle. Timing-sensitive checks take their
  // time from the protocol (a fake clock where they pin when, counts and outcomes where they run for
  // real), so the load four workers make breaks none; `.ci/run` shows it on every run.
  maxWorkers: 4,
  // A worker keeps every test file's module graph it ran (jest's and Node's own bookkeeping of each
  // file's context hold it, not the tests: no handle is left after any file's teardown): 13-24 MB more
  // per file, about a gigabyte after the ~58 files a worker runs in a full run. Node takes about 750 ms
  // to exit with a 1 GB heap, past jest's 500 ms, which then prints "a worker process has failed to exit
  // gracefully" and kills it. Replacing large workers (workerIdleMemoryLimit) prints the same for each
  // replacement; the exit is given the time it takes instead.
  workerGracefulExitTimeout: 3000,
};
