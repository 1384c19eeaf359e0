/**
 * The import rules (ARCHITECTURE.md "Layers"): within lambda/, a folder imports only folders of lower
 * layers, the two era paths never import each other; lambda/ (what the Lambda bundle holds) imports
 * nothing around it and evaluates no devDependency; the tools around it (dev/, tools/lambda-emulator/,
 * examples/targets/) depend on lambda/ only where they must; and there are no cycles. `npm run lint` runs it.
 */
const LAYERS = [
  ['protocol'], // MCP vocabulary: imports nothing from the project
  ['config', 'observability'],
  ['http', 'scheduling', 'outbound'], // outbound: the one policy for URLs others choose; the exchange contract, responses, SSE writer, error responses; an owner's timers and background work (not MCP Tasks)
  ['state', 'crypto', 'auth'],
  ['connections'], // per-user OAuth: the vault, the authorization server's client, consent links (targets call as the user)
  ['targets'], // one upstream interface per target; eras decided here
  ['policy'], // confirmTools, tool filtering
  ['catalog'], // list, expose, resolve across targets
  ['calls'], // what a relayed call of either era is: the instance's calls registry, progress tokens, the deps both era paths share
  ['pending'], // a target's request to the client waiting for its answer: the holder, the answer's one intake and delivery (both eras)
  ['legacy', 'modern'], // the era paths
  ['app'], // wiring: builds the gateway, routes a request to its era's path
  ['adapters'], // function URL ⇄ exchange; node:http ⇄ exchange (the Web Function, the local server)
];

const layerOf = new Map(LAYERS.flatMap((folders, index) => folders.map((folder) => [folder, index])));

const upward = [...layerOf].map(([folder, index]) => {
  const sameOrHigher = [...layerOf].filter(([other, i]) => other !== folder && i >= index).map(([other]) => other);
  return {
    name: `layer-${folder}`,
    comment: `lambda/${folder} may import only lower layers (${LAYERS.slice(0, index).flat().join(', ') || 'none'})`,
    severity: 'error',
    from: { path: `^lambda/${folder}/` },
    // The two entry points (handler.ts: function URL; web-function.ts: Web Function) sit on top of all.
    to: { path: [`^lambda/(${sameOrHigher.join('|')})/`, '^lambda/(handler|web-function)\\.ts$'] },
  };
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, between files or folders.',
      severity: 'error',
      from: { path: '^(lambda|dev|tools|examples)/' },
      to: { circular: true },
    },
    {
      name: 'known-folders-only',
      comment: 'Every folder of lambda/ has a layer (add new ones to LAYERS).',
      severity: 'error',
      from: { path: '^lambda/', pathNot: [`^lambda/(${[...layerOf.keys()].join('|')})/`, '^lambda/[^/]+\\.ts$'] },
      to: {},
    },
    {
      name: 'lambda-stands-alone',
      comment: 'lambda/ is what the Lambda bundle holds: it imports nothing from the folders around it.',
      severity: 'error',
      from: { path: '^lambda/' },
      to: { path: '^(dev|tools|examples|test|bench|lib|bin|scripts)/' },
    },
    {
      name: 'lambda-runs-no-dev-dependency',
      comment:
        'lambda/ evaluates only dependencies the bundle may hold; type-only imports of devDependencies are erased.',
      severity: 'error',
      from: { path: '^lambda/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'emulator-stands-alone',
      comment: 'tools/lambda-emulator/ runs any function as Lambda does: it knows nothing of the gateway.',
      severity: 'error',
      from: { path: '^tools/lambda-emulator/' },
      to: { path: '^(lambda|dev|examples|test|bench|lib|bin|scripts)/' },
    },
    {
      name: 'web-function-emulator-stands-alone',
      comment: 'tools/web-function-emulator/ runs any Web Function application: it knows nothing of the gateway.',
      severity: 'error',
      from: { path: '^tools/web-function-emulator/' },
      to: {
        path: [
          '^(lambda|dev|examples|test|bench|lib|bin|scripts)/',
          '^tools/(?!web-function-emulator/|process-guard/)',
        ],
      },
    },
    {
      name: 'process-guard-stands-alone',
      comment: "tools/process-guard/ ends both emulators' children with their parent: it knows nothing else.",
      severity: 'error',
      from: { path: '^tools/process-guard/' },
      to: { path: ['^(lambda|dev|examples|test|bench|lib|bin|scripts)/', '^tools/(?!process-guard/)'] },
    },
    {
      name: 'demo-targets-stand-alone',
      comment: 'examples/targets/ are MCP servers built with the official SDKs only, not with gateway code.',
      severity: 'error',
      from: { path: '^examples/targets/' },
      to: { path: '^(lambda|dev|tools|test|bench|lib|bin|scripts)/' },
    },
    {
      name: 'dev-not-into-tests',
      comment: 'dev/ (npm start) does not depend on tests, benchmarks or the CDK app (lib/config/ is shared).',
      severity: 'error',
      from: { path: '^dev/' },
      to: { path: ['^(test|bench|bin|scripts)/', '^lib/(?!config/)'] },
    },
    ...upward,
  ],
  options: {
    // Packages are listed (so the devDependency rule sees them) but not followed; the emulator's runtime
    // image, installed in place on a machine without its cache, is not ours to check.
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^tools/lambda-emulator/image/node_modules/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
