/** The 2025-era demo target (tools in `legacy-tools.ts`, HTTP host in `legacy-host.ts`). */
export {
  type DemoTarget,
  type DemoTargetOptions,
  type DemoTargetStats,
  startDemoTarget,
} from './legacy-host';
