import { type JestGlobalConfig, reportAtEnd } from './jest-report';

export default (config: JestGlobalConfig): void => reportAtEnd(config);
