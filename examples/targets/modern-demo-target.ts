/** The 2026-07-28 demo target (tools in `demo/modern-tools.ts`, HTTP host in `demo/modern-host.ts`). */
export {
  type ModernDemoCall,
  type ModernDemoStats,
  type ModernDemoTarget,
  type ModernDemoTargetOptions,
  startModernDemoTarget,
} from './modern-host';
