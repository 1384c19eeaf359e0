import { type JestGlobalConfig, reportAtStart } from './jest-report';

export default (config: JestGlobalConfig): void => reportAtStart(config);
