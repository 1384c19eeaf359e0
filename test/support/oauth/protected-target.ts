// The protected MCP server is runnable on its own (`npm run oauth:demo`), so it lives with the demo targets.
export * from '../../../examples/targets/protected-target';
