import { OutboundPolicy, OutboundRefusedError } from '../../../lambda/outbound/policy';

/** What the outbound policy lets the gateway reach of URLs others chose, decided before any connection. */

const policy = (allowedOrigins: string[] = [], runtimeApi?: string) =>
  new OutboundPolicy({ allowedOrigins, runtimeApi });

/** The refusal's reason, or 'reached' when the policy lets it through. */
function verdict(check: () => void): string {
  try {
    check();
    return 'reached';
  } catch (error) {
    if (error instanceof OutboundRefusedError) return error.reason;
    throw error;
  }
}

describe('a URL before any connection', () => {
  it.each([
    ['https://auth.example.com/.well-known/oauth-authorization-server', 'reached'],
    ['http://auth.example.com/token', 'plain http is reached only at an origin the operator named'],
    ['ftp://auth.example.com/x', 'only https is reached'],
    ['file:///etc/passwd', 'only https is reached'],
    ['https://user:secret@auth.example.com/token', 'credentials in a URL are not sent'],
  ])('%s: %s', (url, expected) => {
    expect(verdict(() => policy().checkUrl(new URL(url)))).toBe(expected);
  });

  it.each([
    'https://127.0.0.1/x',
    'https://127.1/x',
    'https://0x7f000001/x',
    'https://[::1]/x',
    'https://[::ffff:127.0.0.1]/x',
    'https://10.0.0.5/x',
    'https://169.254.169.254/latest/meta-data/',
    'https://[fd00:ec2::254]/x',
    'https://100.64.0.1/x',
    'https://0.0.0.0/x',
    'https://[fe80::1]/x',
  ])('an address written in the URL is judged as the address it is: %s', (url) => {
    expect(verdict(() => policy().checkUrl(new URL(url)))).toMatch(
      / address; list the origin in outbound\.allowedOrigins/,
    );
  });

  it('an origin the operator named may be plain http on a private address', () => {
    expect(verdict(() => policy(['http://10.0.0.5:8080']).checkUrl(new URL('http://10.0.0.5:8080/token')))).toBe(
      'reached',
    );
    // The same host on another port or scheme is another origin.
    expect(verdict(() => policy(['http://10.0.0.5:8080']).checkUrl(new URL('http://10.0.0.5:8081/token')))).not.toBe(
      'reached',
    );
  });
});

describe('the address a name resolved to', () => {
  const url = new URL('https://auth.example.com/token');
  it.each([
    ['93.184.215.14', 'reached'],
    ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', 'reached'],
    ['127.0.0.1', '127.0.0.1 is a loopback address'],
    ['::1', '::1 is a loopback address'],
    ['::ffff:10.1.2.3', '::ffff:10.1.2.3 is a private address'],
    ['192.168.1.1', '192.168.1.1 is a private address'],
    ['172.31.255.255', '172.31.255.255 is a private address'],
    ['169.254.169.254', '169.254.169.254 is a link-local address'],
    ['fe80::1', 'fe80::1 is a link-local address'],
    ['100.100.100.100', '100.100.100.100 is a carrier-grade NAT address'],
    ['fc00::1', 'fc00::1 is a unique-local address'],
    ['0.0.0.0', '0.0.0.0 is an unspecified address'],
    ['::', ':: is an unspecified address'],
    ['224.0.0.1', '224.0.0.1 is a multicast address'],
    // NAT64 and 6to4 carry an IPv4 address inside: refused, not judged by the public-looking prefix.
    ['64:ff9b::7f00:1', '64:ff9b::7f00:1 is a NAT64 address'],
    ['2002:7f00:1::', '2002:7f00:1:: is a 6to4 address'],
  ])('%s: %s', (address, expected) => {
    expect(verdict(() => policy().checkAddress(url, address, 443)).replace(/; list the origin.*$/, '')).toBe(expected);
  });
});

describe('the Lambda Runtime API', () => {
  const api = '127.0.0.1:9001';
  it('is never reached, not even at an origin the operator named', () => {
    const named = policy(['http://127.0.0.1:9001'], api);
    expect(verdict(() => named.checkUrl(new URL('http://127.0.0.1:9001/2018-06-01/runtime/invocation/next')))).toBe(
      'the Lambda Runtime API',
    );
  });

  it('nor through another loopback or the unspecified address on its port, nor by a name resolving there', () => {
    const named = policy(['http://127.0.0.2:9001', 'http://gateway.internal:9001'], api);
    expect(verdict(() => named.checkUrl(new URL('http://127.0.0.2:9001/x')))).toBe('the Lambda Runtime API');
    const byName = new URL('http://gateway.internal:9001/x');
    expect(verdict(() => named.checkAddress(byName, '127.0.0.1', 9001))).toBe('the Lambda Runtime API');
    expect(verdict(() => named.checkAddress(byName, '0.0.0.0', 9001))).toBe('the Lambda Runtime API');
    expect(verdict(() => named.checkAddress(byName, '::ffff:127.0.0.1', 9001))).toBe('the Lambda Runtime API');
    // Another port of a named loopback origin is that origin's business.
    expect(
      verdict(() =>
        policy(['http://127.0.0.1:9002'], api).checkAddress(new URL('http://127.0.0.1:9002'), '127.0.0.1', 9002),
      ),
    ).toBe('reached');
  });
});

describe('where a consent may send the browser', () => {
  it.each([
    ['https://auth.example.com/authorize', true],
    ['http://127.0.0.1:4000/auth', true],
    ['http://localhost:4000/auth', true],
    ['http://auth.example.com/authorize', false],
    ['ms-msdt:/id PCWDiagnostic', false],
    ['search-ms:query=x', false],
    ['vscode://file/etc/passwd', false],
    ['file:///etc/passwd', false],
    ['javascript:alert(1)', false],
    ['https://user:pw@auth.example.com/', false],
  ])('%s: %s', (url, allowed) => {
    expect(policy().allowsBrowserRedirect(new URL(url))).toBe(allowed);
  });
});
