import { chromium, openssl, pythonClients } from '../../support/prerequisites';
import { notRunLine } from '../../support/setup/not-run';
import type { Missing } from '../../support/setup/prerequisite';

/** The line a run says first and last when it leaves tests out: which files, why, and the one command. */

const noChromium: Missing = { prerequisite: chromium, reason: 'not at /usr/bin/chromium', packages: ['chromium'] };
const noOpenssl: Missing = { prerequisite: openssl, reason: 'not on PATH', packages: ['openssl'] };
const noPython: Missing = {
  prerequisite: pythonClients,
  reason: 'python3 not found',
  packages: ['python3', 'python3-venv'],
  command: 'npm run test:setup',
};
const everything = () => true;

test('each missing prerequisite with the files it keeps from running, then one install command for all', () => {
  expect(notRunLine([noChromium, noOpenssl], everything, false)).toBe(
    'tests not run here: 11 files need Chromium (not at /usr/bin/chromium): oauth/client-id-metadata, ' +
      'oauth/consent-security, oauth/hostile-target, oauth/login-csrf, oauth/per-user-oauth, ' +
      'oauth/protected-target-direct, oauth/refresh-across-instances, oauth/released-while-connecting, ' +
      'oauth/tokens-not-logged, oauth/url-elicitation-samples, integration/oauth-demo; ' +
      '1 file needs openssl (not on PATH): oauth/client-id-metadata. install: sudo apt-get install chromium openssl',
  );
});

test('only the files the run selects are named; none selected, no line', () => {
  const oauthOnly = (suite: string) => suite.startsWith('test/oauth/consent');
  expect(notRunLine([noChromium, noPython], oauthOnly, false)).toBe(
    'tests not run here: 1 file needs Chromium (not at /usr/bin/chromium): oauth/consent-security. install: sudo apt-get install chromium',
  );
  expect(notRunLine([noChromium, noPython], (suite) => suite.startsWith('test/unit/'), false)).toBeUndefined();
  expect(notRunLine([], everything, false)).toBeUndefined();
});

test('packages first (no sudo for root), then what prepares the rest', () => {
  expect(notRunLine([noPython], (suite) => suite.includes('client-recipes'), true)).toBe(
    "tests not run here: 1 file needs the Python clients' environment (python3 not found): integration/client-recipes. " +
      'install: apt-get install python3 python3-venv; then: npm run test:setup',
  );
  const notPrepared: Missing = { ...noPython, reason: 'not prepared', packages: [] };
  expect(notRunLine([notPrepared], (suite) => suite.includes('client-recipes'), false)).toBe(
    "tests not run here: 1 file needs the Python clients' environment (not prepared): integration/client-recipes. " +
      'prepare: npm run test:setup',
  );
});
