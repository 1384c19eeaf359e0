import { describeReleaseWhileWaiting } from '../support/release-while-waiting';

// The Lambda runtime's run of the same suite is test/lambda-runtime/release-while-waiting.test.ts.
describeReleaseWhileWaiting('local server');
