import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { type GatewayConfigInput, parseConfig, secretArnsIn } from '../../lambda/config/schema';
import { contextOf } from '../../lambda/connections/vault';
import { CONNECTIONS_KEY_ACTIONS, CONNECTIONS_KEY_PURPOSE, McpGateway, SECRET_ACTIONS } from '../../lib/mcp-gateway';
import { buildGatewayApp, type McpGatewayStack } from '../../lib/mcp-gateway-stack';

/**
 * Per-user OAuth deployed (`targets[].userOAuth`): the KMS key that wraps the users' stored
 * connections — created unless `connections.kmsKeyArn` names one — its ARN in the function's
 * configuration, and the one conditioned grant on it; nothing of it without userOAuth. Apps skip
 * bundling and CDK's CloudFormation schema validation, as in mcp-gateway.test.ts.
 */

const ROOT = join(__dirname, '..', '..');
const FAST = { builtinCloudFormationValidation: false, context: { 'aws:cdk:bundling-stacks': [] as string[] } };
const USER_OAUTH_TARGET = { name: 'tracker', url: 'https://tracker.example/mcp', userOAuth: {} };
const PLAIN_TARGET = { name: 'docs', url: 'https://docs.example/mcp' };
const KEY_ARN = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const ALIAS_ARN = 'arn:aws:kms:eu-west-1:123456789012:alias/mcp-gateway/connections';
const CLIENT_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/tracker-client-AbC123';
const LOGIN_SECRET = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:gateway/idp-login-XyZ789';
const JWT = { type: 'jwt', discoveryUrl: 'https://idp.example.com/.well-known/openid-configuration' } as const;
const PURPOSE_CONDITION = { StringEquals: { 'kms:EncryptionContext:purpose': 'mcp-gateway/connection' } };

function synth(context: Record<string, unknown> = {}): { stack: McpGatewayStack; template: Template } {
  const app = new App({ ...FAST, context: { ...FAST.context, ...context } });
  const stack = buildGatewayApp(app);
  return { stack, template: Template.fromStack(stack) };
}

function userOAuthContext(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { targets: JSON.stringify([PLAIN_TARGET, USER_OAUTH_TARGET]), ...extra };
}

// `any`: CloudFormation resources are untyped JSON.
type Resource = { Properties: Record<string, any>; [key: string]: any };
type Statement = { Sid?: string; Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

function only(template: Template, type: string): Resource {
  const found = Object.values(template.findResources(type));
  expect(found).toHaveLength(1);
  return found[0] as Resource;
}
function logicalIdOf(template: Template, type: string): string {
  const ids = Object.keys(template.findResources(type));
  expect(ids).toHaveLength(1);
  return ids[0];
}
function statements(template: Template): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
    (policy) => (policy as Resource).Properties.PolicyDocument.Statement,
  );
}
function kmsStatements(template: Template): Statement[] {
  return statements(template).filter((s) => [s.Action].flat().some((action) => action.startsWith('kms:')));
}
function nagViolations(stack: Stack): string[] {
  return [new AwsSolutionsChecks(), new ServerlessChecks()].flatMap((pack) =>
    pack.validateScope(stack).violations.map((v) => v.ruleName),
  );
}

/** A configuration document as deployed: its references written `<Ref:Id>` and `<GetAtt:Id.Attribute>`. */
function documentOf(value: unknown): Record<string, any> {
  if (typeof value === 'string') return JSON.parse(value);
  const [, parts] = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
  return JSON.parse(
    parts
      .map((part) => {
        if (typeof part === 'string') return part;
        const ref = part as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
        if (ref.Ref) return `<Ref:${ref.Ref}>`;
        if (ref['Fn::GetAtt']) return `<GetAtt:${ref['Fn::GetAtt'].join('.')}>`;
        throw new Error(`unexpected part ${JSON.stringify(part)}`);
      })
      .join(''),
  );
}
function functionConfig(template: Template): Record<string, any> {
  return documentOf(only(template, 'AWS::Lambda::Function').Properties.Environment.Variables.GATEWAY_CONFIG);
}

describe('a target with userOAuth, no connections.kmsKeyArn: the stack creates the key', () => {
  let template: Template;
  let stack: McpGatewayStack;
  let keyId: string;
  beforeAll(() => {
    ({ template, stack } = synth(userOAuthContext()));
    keyId = logicalIdOf(template, 'AWS::KMS::Key');
  });

  test('one symmetric key with rotation and a description, retained like the table', () => {
    const key = only(template, 'AWS::KMS::Key');
    expect(key.Properties.EnableKeyRotation).toBe(true);
    expect(key.Properties.Description).toMatch(/^MCP gateway: .*per-user OAuth connections/);
    expect(key.Properties.KeySpec).toBeUndefined(); // SYMMETRIC_DEFAULT, what GenerateDataKey needs
    expect(key.Properties.KeyUsage).toBeUndefined(); // ENCRYPT_DECRYPT
    expect(key.DeletionPolicy).toBe('Retain');
    expect(key.UpdateReplacePolicy).toBe('Retain');
    expect(only(template, 'AWS::DynamoDB::Table').DeletionPolicy).toBe('Retain');
    expect(stack.gateway.connectionsKey).toBeDefined();
    expect(stack.getLogicalId(stack.gateway.connectionsKey!.node.defaultChild as never)).toBe(keyId);
  });

  test("the function's configuration names the key's ARN as connections.kmsKeyArn", () => {
    const config = functionConfig(template);
    expect(config.connections).toEqual({ linkTtlSeconds: 600, idleDays: 90, kmsKeyArn: `<GetAtt:${keyId}.Arn>` });
    expect(config.targets.map((target: { name: string }) => target.name)).toEqual(['docs', 'tracker']);
  });

  test('the role may GenerateDataKey and Decrypt on that key only, with the vault encryption context', () => {
    expect(kmsStatements(template)).toEqual([
      {
        Sid: 'GatewayConnectionsKey',
        Effect: 'Allow',
        Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
        Resource: { 'Fn::GetAtt': [keyId, 'Arn'] },
        Condition: PURPOSE_CONDITION,
      },
    ]);
    // The key policy is the account's (IAM policies decide), not a grant to the role.
    const keyPolicy = only(template, 'AWS::KMS::Key').Properties.KeyPolicy.Statement as Array<{ Principal: unknown }>;
    expect(keyPolicy).toHaveLength(1);
    expect(JSON.stringify(keyPolicy[0].Principal)).toMatch(/:root/);
  });

  test('an output names the key', () => {
    template.hasOutput('ConnectionsKeyArn', {
      Value: { 'Fn::GetAtt': [keyId, 'Arn'] },
      Description: Match.stringLikeRegexp('connections.kmsKeyArn'),
    });
  });

  test('no unacknowledged cdk-nag finding', () => {
    expect(nagViolations(stack)).toEqual([]);
  });
});

describe('the grant follows the code', () => {
  test('the granted actions are exactly the KMS commands the runtime sends', () => {
    const used = new Set<string>();
    for (const file of listTs(join(ROOT, 'lambda'))) {
      const source = readFileSync(file, 'utf8');
      if (!source.includes('@aws-sdk/client-kms')) continue;
      for (const match of source.matchAll(/new (\w+)Command\(/g)) used.add(`kms:${match[1]}`);
    }
    expect([...used].sort()).toEqual([...CONNECTIONS_KEY_ACTIONS].sort());
  });

  test("the condition's purpose is the one the vault puts in every encryption context", () => {
    expect(contextOf('someone', 'tracker').purpose).toBe(CONNECTIONS_KEY_PURPOSE);
  });
});

describe('connections.kmsKeyArn given: that key is granted, nothing is created', () => {
  test('a key ARN: the same grant on exactly that ARN, the configuration unchanged, no output', () => {
    const { template, stack } = synth(userOAuthContext({ connections: JSON.stringify({ kmsKeyArn: KEY_ARN }) }));
    template.resourceCountIs('AWS::KMS::Key', 0);
    expect(stack.gateway.connectionsKey).toBeUndefined();
    expect(functionConfig(template).connections.kmsKeyArn).toBe(KEY_ARN);
    expect(kmsStatements(template)).toEqual([
      {
        Sid: 'GatewayConnectionsKey',
        Effect: 'Allow',
        Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
        Resource: KEY_ARN,
        Condition: PURPOSE_CONDITION,
      },
    ]);
    expect(template.findOutputs('ConnectionsKeyArn')).toEqual({});
    expect(nagViolations(stack)).toEqual([]);
  });

  test('an alias ARN: granted on the keys of its account and Region for requests naming that alias', () => {
    const { template, stack } = synth(userOAuthContext({ connections: JSON.stringify({ kmsKeyArn: ALIAS_ARN }) }));
    template.resourceCountIs('AWS::KMS::Key', 0);
    expect(functionConfig(template).connections.kmsKeyArn).toBe(ALIAS_ARN);
    expect(kmsStatements(template)).toEqual([
      {
        Sid: 'GatewayConnectionsKey',
        Effect: 'Allow',
        Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
        Resource: 'arn:aws:kms:eu-west-1:123456789012:key/*',
        Condition: {
          StringEquals: {
            'kms:EncryptionContext:purpose': 'mcp-gateway/connection',
            'kms:RequestAlias': 'alias/mcp-gateway/connections',
          },
        },
      },
    ]);
    // The wildcard is acknowledged with its reason, and nothing else is.
    expect(nagViolations(stack)).toEqual([]);
  });
});

describe('no target with userOAuth: no key, no KMS grant', () => {
  test.each([
    ['no targets', {}],
    ['plain targets', { targets: JSON.stringify([PLAIN_TARGET]) }],
    [
      'plain targets and a connections.kmsKeyArn',
      { targets: JSON.stringify([PLAIN_TARGET]), connections: JSON.stringify({ kmsKeyArn: KEY_ARN }) },
    ],
  ])('%s', (_name, context) => {
    const { template, stack } = synth(context);
    template.resourceCountIs('AWS::KMS::Key', 0);
    expect(kmsStatements(template)).toEqual([]);
    expect(stack.gateway.connectionsKey).toBeUndefined();
    expect(template.findOutputs('ConnectionsKeyArn')).toEqual({});
    const given = 'connections' in context ? KEY_ARN : undefined;
    expect(functionConfig(template).connections.kmsKeyArn).toBe(given);
  });
});

describe('both forms and both configuration sources', () => {
  test('Web Function form: the same key, its ARN in the revision configuration, the same grant', () => {
    const { template, stack } = synth(userOAuthContext({ deploymentForm: 'webFunction' }));
    const keyId = logicalIdOf(template, 'AWS::KMS::Key');
    expect(stack.webFunctionGateway.connectionsKey).toBeDefined();
    const revision = only(template, 'AWS::Lambda::WebFunctionRevision');
    const config = documentOf(revision.Properties.ServiceConfig.EnvironmentVariables.GATEWAY_CONFIG);
    expect(config.connections.kmsKeyArn).toBe(`<GetAtt:${keyId}.Arn>`);
    expect(kmsStatements(template)).toEqual([
      {
        Sid: 'GatewayConnectionsKey',
        Effect: 'Allow',
        Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
        Resource: { 'Fn::GetAtt': [keyId, 'Arn'] },
        Condition: PURPOSE_CONDITION,
      },
    ]);
    template.hasOutput('ConnectionsKeyArn', { Value: { 'Fn::GetAtt': [keyId, 'Arn'] } });
    expect(nagViolations(stack)).toEqual([]);
  });

  test("AppConfig: the hosted configuration's first version names the key", () => {
    const { template } = synth(userOAuthContext({ configSource: 'appconfig' }));
    const keyId = logicalIdOf(template, 'AWS::KMS::Key');
    const document = documentOf(only(template, 'AWS::AppConfig::HostedConfigurationVersion').Properties.Content);
    expect(document.connections.kmsKeyArn).toBe(`<GetAtt:${keyId}.Arn>`);
    expect(document.tableName).toBeUndefined();
  });

  test('removalPolicy destroy: the key is deleted with the table', () => {
    const { template } = synth(userOAuthContext({ removalPolicy: 'destroy' }));
    expect(only(template, 'AWS::KMS::Key').DeletionPolicy).toBe('Delete');
    expect(only(template, 'AWS::DynamoDB::Table').DeletionPolicy).toBe('Delete');
  });

  test('the construct alone: the key follows its removalPolicy, and the configuration it exposes names the key', () => {
    const stack = new Stack(new App(FAST), 'S');
    const gateway = new McpGateway(stack, 'Gateway', {
      config: { targets: [USER_OAUTH_TARGET] },
      removalPolicy: RemovalPolicy.DESTROY,
    });
    expect(gateway.connectionsKey).toBeDefined();
    expect(gateway.config.connections.kmsKeyArn).toBe(gateway.connectionsKey!.keyArn);
    expect(only(Template.fromStack(stack), 'AWS::KMS::Key').DeletionPolicy).toBe('Delete');
  });
});

describe('secrets of per-user OAuth', () => {
  test("a userOAuth clientSecret and identityLogin's clientSecret are granted by exact ARN", () => {
    const tracker = {
      ...USER_OAUTH_TARGET,
      userOAuth: {
        clientId: 'gateway',
        clientSecret: { secretArn: CLIENT_SECRET },
        authorizationServer: 'https://login.tracker.example',
      },
    };
    const connections = { identityLogin: { clientId: 'gateway-login', clientSecret: { secretArn: LOGIN_SECRET } } };
    const { template, stack } = synth({
      targets: JSON.stringify([tracker]),
      auth: JSON.stringify(JWT),
      connections: JSON.stringify(connections),
    });
    const granted = statements(template).filter((s) => s.Sid === 'GatewaySecrets');
    expect(granted).toHaveLength(1);
    expect(granted[0].Action).toBe(SECRET_ACTIONS[0]);
    expect(granted[0].Resource).toEqual([
      CLIENT_SECRET,
      LOGIN_SECRET,
      { Ref: expect.stringMatching(/^GatewayRequestStateKey/) },
    ]);
    // Every secret the runtime reads (secretArnsIn) is granted.
    const config = parseConfig({ targets: [tracker], auth: JWT, connections } satisfies GatewayConfigInput);
    expect(secretArnsIn(config).sort()).toEqual([CLIENT_SECRET, LOGIN_SECRET].sort());
    for (const arn of secretArnsIn(config)) expect(granted[0].Resource).toContain(arn);
    expect(nagViolations(stack)).toEqual([]);
  });
});

describe('connections.localKey in a deployment', () => {
  test('synth warns: it is plain text in the template, and the KMS key is used instead', () => {
    const { stack } = synth(userOAuthContext({ connections: JSON.stringify({ localKey: 'x'.repeat(40) }) }));
    expect(
      Annotations.fromStack(stack).findWarning(
        '*',
        Match.stringLikeRegexp('connections.localKey is stored in plain text'),
      ),
    ).toHaveLength(1);
    const quiet = synth(userOAuthContext()).stack;
    expect(Annotations.fromStack(quiet).findWarning('*', Match.stringLikeRegexp('connections.localKey'))).toHaveLength(
      0,
    );
  });
});

function listTs(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return listTs(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}
