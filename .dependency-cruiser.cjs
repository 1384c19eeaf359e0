/**
 * The import rules of lambda/ (ARCHITECTURE.md "Layers"): a folder imports only folders of lower
 * layers, the two era paths never import each other, and there are no cycles. `npm run lint` runs it.
 */
const LAYERS = [
  ['protocol'], // MCP vocabulary: imports nothing from the project
  ['config', 'observability'],
  ['http'], // the exchange contract, responses, SSE writer, error responses
  ['state', 'crypto', 'auth'],
  ['targets'], // one upstream interface per target; eras decided here
  ['policy'], // confirmTools, tool filtering
  ['catalog'], // list, expose, resolve across targets
  ['relay'], // mechanisms both era paths use
  ['legacy', 'stateless'], // the era paths
  ['app'], // wiring: builds the gateway, routes a request to its era's path
  ['adapters'], // function URL ⇄ exchange
  ['local'], // npm start, demo targets, the local Lambda runtime
];

const layerOf = new Map(LAYERS.flatMap((folders, index) => folders.map((folder) => [folder, index])));

const upward = [...layerOf].map(([folder, index]) => {
  const sameOrHigher = [...layerOf].filter(([other, i]) => other !== folder && i >= index).map(([other]) => other);
  return {
    name: `layer-${folder}`,
    comment: `lambda/${folder} may import only lower layers (${LAYERS.slice(0, index).flat().join(', ') || 'none'})`,
    severity: 'error',
    from: { path: `^lambda/${folder}/` },
    to: { path: [`^lambda/(${sameOrHigher.join('|')})/`, '^lambda/handler\\.ts$'] },
  };
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, between files or folders.',
      severity: 'error',
      from: { path: '^lambda/' },
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
      name: 'runtime-not-into-tests',
      severity: 'error',
      from: { path: '^lambda/' },
      to: { path: '^(test|bench|lib|bin)/' },
    },
    ...upward,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
