// Tests run on the developer's Node 20; the AWS SDK's notice about its Node 22 requirement is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // jose 6 (JWT verification) is ESM-only and jest runs CommonJS: compile its files to CommonJS too.
    '/node_modules/jose/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs', target: 'ES2022' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  testTimeout: 30000,
  // Most files wait on loopback servers, clients' think times and timeouts rather than compute: four
  // workers keep a 2-core machine busy without starving the tests' timing (measured under load).
  maxWorkers: 4,
};
