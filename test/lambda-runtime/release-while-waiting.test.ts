import { describeReleaseWhileWaiting } from '../support/release-while-waiting';

// The local server's run of the same suite is test/integration/release-while-waiting.test.ts.
describeReleaseWhileWaiting('lambda runtime');
