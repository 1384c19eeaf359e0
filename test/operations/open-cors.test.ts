import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedDynamo } from '../../dev/embedded-dynamodb';
import { startLocalGateway } from '../../dev/local-gateway';
import { capturingLogger } from '../auth/support';
import { runCli } from '../support/cli';
import { post, readMessage } from '../support/mcp-http';

/**
 * `cors.allowedOrigins: ["*"]` with auth `none` would let any web page the user opens drive the
 * local gateway: refused at start with one line, unless the configuration says it is intended.
 */

const REFUSAL =
  'cors.allowedOrigins "*" with auth "none" lets any web page you open call this gateway and its targets; list the origins that may call, set auth, or set cors.allowAnyOriginWithoutAuth: true if that is intended\n';

function configFile(config: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'open-cors-')), 'gateway.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

describe('any origin without authentication', () => {
  it('npm start refuses to start with one line (exit 1), before anything listens', async () => {
    const cli = runCli(['--port', '0', '--no-demo', '--config', configFile({ cors: { allowedOrigins: ['*'] } })]);
    expect(await cli.exited).toBe(1);
    expect(cli.output()).toEqual({ stdout: '', stderr: REFUSAL });
  }, 40_000);

  it('npm start -- --lambda refuses it the same way', async () => {
    const cli = runCli([
      '--lambda',
      '--port',
      '0',
      '--no-demo',
      '--config',
      configFile({ cors: { allowedOrigins: ['*'] } }),
    ]);
    expect(await cli.exited).toBe(1);
    expect(cli.output()).toEqual({ stdout: '', stderr: REFUSAL });
  }, 40_000);

  it('starts when asked for explicitly, and then a page of any origin may call', async () => {
    const dynamo = await startEmbeddedDynamo();
    const gateway = await startLocalGateway({
      port: 0,
      demo: false,
      startupReport: false,
      dynamodbEndpoint: dynamo.endpoint,
      logger: capturingLogger(),
      config: { cors: { allowedOrigins: ['*'], allowAnyOriginWithoutAuth: true } },
    });
    try {
      const res = await post(
        gateway.url,
        { origin: 'http://any-page.example' },
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
        },
      );
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect((await readMessage(res)).result.protocolVersion).toBe('2025-11-25');
    } finally {
      await gateway.close();
      await dynamo.close();
    }
  }, 40_000);

  it('a listed origin, or auth, is not refused', async () => {
    const { refuseOpenCorsWithoutAuth } = await import('../../dev/open-cors');
    const { parseConfig } = await import('../../lambda/config/schema');
    expect(() =>
      refuseOpenCorsWithoutAuth(parseConfig({ cors: { allowedOrigins: ['http://localhost:6274'] } })),
    ).not.toThrow();
    expect(() =>
      refuseOpenCorsWithoutAuth(parseConfig({ auth: { type: 'iam' }, cors: { allowedOrigins: ['*'] } })),
    ).not.toThrow();
    expect(() => refuseOpenCorsWithoutAuth(parseConfig({ cors: { allowedOrigins: ['*'] } }))).toThrow(
      /^cors\.allowedOrigins "\*" with auth "none"/,
    );
  });
});
