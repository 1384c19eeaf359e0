import { refuseSocketsAndProcesses } from './isolation-switch';

/** Loaded before each unit test file (jest `setupFiles` of the unit project). */
refuseSocketsAndProcesses();
