import { allowSocketsAndProcesses } from './isolation-switch';

/**
 * Loaded before each system test file (jest `setupFiles` of the system project): undoes a unit file's
 * refusal that ran earlier in the same worker.
 */
allowSocketsAndProcesses();
