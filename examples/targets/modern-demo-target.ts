/** The 2026-07-28 demo target (tools in `modern-tools.ts`, HTTP host in `modern-host.ts`). */
export {
  type ModernDemoCall,
  type ModernDemoStats,
  type ModernDemoTarget,
  type ModernDemoTargetOptions,
  startModernDemoTarget,
} from './modern-host';
