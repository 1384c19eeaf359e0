/** The 2025-era demo target (tools in `demo/legacy-tools.ts`, HTTP host in `demo/legacy-host.ts`). */
export {
  type DemoTarget,
  type DemoTargetOptions,
  type DemoTargetStats,
  startDemoTarget,
} from './legacy-host';
