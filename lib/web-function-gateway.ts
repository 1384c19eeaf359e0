import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { Aspects, Duration, type IAspect, Stack, Validations } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct, IConstruct } from 'constructs';
import { ENV } from '../lambda/config/environment';
import { HANDLER_FILE, WEB_FUNCTION_BUILD_DIR, WEB_FUNCTION_ENTRY, writeBundle } from './bundling';
import { bundledFromSource, functionUrlAuthFor, GatewayBase, type GatewaySharedProps } from './mcp-gateway';
import { GatewayMonitoring } from './monitoring';

/** The Web Function's server source, bundled by esbuild at synth time (present in this repository only). */
export const DEFAULT_WEB_FUNCTION_ENTRY = path.join(__dirname, '..', WEB_FUNCTION_ENTRY);

/** The file the Web Function runs: the bundle's entry (its chunks beside it). */
export const WEB_FUNCTION_ENTRY_POINT = HANDLER_FILE;

/** Requests one execution environment serves at once, unless set (the service's own default too). */
export const DEFAULT_MAX_CONCURRENCY_PER_ENVIRONMENT = 64;

/** The runtime sets the entry point through this variable (from `entryPoint`): `environment` may not. */
const ENTRY_POINT_ENV = 'AWS_LAMBDA_NODEJS_ENTRYPOINT';

/** The id of the code bucket `WebFunctionCode.fromAssetToManagedBucket` makes, once per stack (aws-cdk-lib). */
const MANAGED_CODE_BUCKET_ID = 'AWSCDKWebFunctionAssetBucket';

/**
 * How clients reach the Web Function's endpoint, chosen as the function URL's is (`functionUrlAuthFor`):
 * SigV4-signed (IAM) unless the gateway validates JWTs itself, when the endpoint is public and the
 * gateway is the only check.
 */
export function webFunctionAuthFor(authType: string): lambda.WebFunctionAuthType {
  return functionUrlAuthFor(authType) === lambda.FunctionUrlAuthType.AWS_IAM
    ? lambda.WebFunctionAuthType.IAM_AUTH
    : lambda.WebFunctionAuthType.APPLICATION_MANAGED;
}

export interface McpWebFunctionGatewayProps extends GatewaySharedProps {
  /**
   * The Web Function's timeout (3–900 s): the longest any request may run. The server is told it
   * (GATEWAY_REQUEST_TIMEOUT_SECONDS), so a waiting call is released or ended before the cut.
   * @default Duration.seconds(900): elicitations wait on people (the Web Function's own default is 30 s)
   */
  readonly timeout?: Duration;
  /** Requests one execution environment serves at once (1–128). @default 64 */
  readonly maxConcurrencyPerEnvironment?: number;
  /**
   * The server file, bundled with esbuild at synth time. @default lambda/web-function.ts of this
   * repository (the published package ships no prebuilt Web Function bundle)
   */
  readonly entry?: string;
  /**
   * The endpoint's other settings (name, location, maxEnvironments, rateLimit); its auth type follows
   * the configuration's `auth`. @default a home-Region endpoint named `prod`, no limits beyond the account's
   */
  readonly endpointOptions?: lambda.WebFunctionDefaultEndpointOptions;
}

/**
 * The MCP gateway as a Lambda Web Function: the gateway's own HTTP server (lambda/web-function.ts) in
 * each execution environment, many requests at once, behind the Web Function's endpoint; the same
 * table, log group, role, requestState key, AppConfig and gateway alarms as McpGateway (GatewayBase).
 * There is no `lambda.Function`, so no alarms on its metrics (GatewayMonitoring without `function`), no
 * alias, no CodeDeploy, no VPC (a Web Function reaches one through a network connector, not made here)
 * and no X-Ray active tracing. The gateway answers CORS itself: the endpoint has no CORS setting.
 *
 * @example
 * ```ts
 * const gateway = new McpWebFunctionGateway(this, 'Gateway', {
 *   config: { targets: [{ name: 'docs', url: 'https://docs.example.com/mcp' }] },
 * });
 * gateway.grantInvoke(someRole); // when the endpoint uses IAM auth
 * new CfnOutput(this, 'Endpoint', { value: gateway.endpoint });
 * ```
 */
export class McpWebFunctionGateway extends GatewayBase {
  readonly webFunction: lambda.WebFunction;
  /** The endpoint's URL, `https://<domain name>/`. */
  readonly url: string;
  /** The MCP endpoint: `<url>mcp`. */
  readonly endpoint: string;
  readonly endpointAuthType: lambda.WebFunctionAuthType;
  readonly timeout: Duration;
  readonly maxConcurrencyPerEnvironment: number;
  readonly monitoring: GatewayMonitoring;
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarmTopic?: sns.Topic;
  /**
   * The role of the deployment's code-copy step (a Lambda function CDK adds to stage the bundle into the
   * managed code bucket): only its log group and what CDK grants it on the two buckets.
   */
  readonly codeCopyRole: iam.Role;

  constructor(scope: Construct, id: string, props: McpWebFunctionGatewayProps = {}) {
    const timeout = props.timeout ?? Duration.seconds(900);
    super(scope, id, props, timeout, 'McpWebFunctionGateway');
    this.timeout = timeout;
    this.maxConcurrencyPerEnvironment = props.maxConcurrencyPerEnvironment ?? DEFAULT_MAX_CONCURRENCY_PER_ENVIRONMENT;
    this.endpointAuthType = webFunctionAuthFor(this.parsedConfig.auth.type);
    const codeCopyLogs = new logs.LogGroup(this, 'CodeCopyLogs', {
      retention: this.logRetention,
      removalPolicy: this.removalPolicy,
    });
    this.codeCopyRole = new iam.Role(this, 'CodeCopyRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: "MCP gateway deployment: copies the Web Function's code into its code bucket",
    });
    codeCopyLogs.grantWrite(this.codeCopyRole);
    this.webFunction = this.createWebFunction(props, { role: this.codeCopyRole, logGroup: codeCopyLogs });
    this.url = `https://${this.webFunction.endpoint.domainName}/`;
    this.endpoint = `${this.url}mcp`;
    this.monitoring = new GatewayMonitoring(this, 'Monitoring', {
      table: this.table,
      timeout,
      metricsNamespace: this.metricsNamespace,
      metricsServiceName: this.metricsServiceName,
      targetNames: this.parsedConfig.targets.map((target) => target.name),
      alarmEmail: props.alarmEmail,
    });
    this.dashboard = this.monitoring.dashboard;
    this.alarmTopic = this.monitoring.alarmTopic;
    this.acknowledgeNagFindings();
  }

  /** The Web Function's name. */
  get webFunctionName(): string {
    return this.webFunction.webFunctionName;
  }

  /** Lets a principal call the endpoint when it uses IAM auth (lambda:InvokeWebFunctionEndpoint). */
  grantInvoke(grantee: iam.IGrantable): iam.Grant {
    return this.webFunction.endpoint.grants.invoke(grantee);
  }

  private createWebFunction(
    props: McpWebFunctionGatewayProps,
    copyOptions: lambda.WebFunctionCodeCopyOptions,
  ): lambda.WebFunction {
    const environment = this.gatewayEnvironment(
      props,
      // Each request's deadline: the function's timeout cuts every request still open.
      { [ENV.requestTimeoutSeconds]: String(this.timeout.toSeconds()) },
      { [ENTRY_POINT_ENV]: WEB_FUNCTION_ENTRY_POINT },
    );
    const webFunction = new lambda.WebFunction(this, 'WebFunction', {
      code: webFunctionCode(props.entry, copyOptions),
      runtime: lambda.WebFunctionRuntime.NODEJS_24_X,
      entryPoint: WEB_FUNCTION_ENTRY_POINT,
      role: this.role,
      logGroup: this.logGroup,
      environment,
      timeout: this.timeout,
      maxConcurrencyPerEnvironment: this.maxConcurrencyPerEnvironment,
      defaultEndpointAuth: this.endpointAuthType,
      defaultEndpoint: props.endpointOptions,
      revisionDescription: 'MCP gateway (Web Function)',
    });
    // The revision serves traffic once created: its role's permissions (table, secrets, logs) come first.
    webFunction.resourceRevision.node.addDependency(this.role);
    return webFunction;
  }

  /**
   * cdk-nag acknowledgements, each with its reason: the parts CDK adds to stage the code (the stack's
   * managed code bucket, the copy function and its role). The gateway's own role has no finding.
   */
  private acknowledgeNagFindings(): void {
    const stack = Stack.of(this);
    const bucket = stack.node.tryFindChild(MANAGED_CODE_BUCKET_ID);
    if (bucket) {
      Validations.of(bucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason:
          "The stack's managed Web Function code bucket (made by aws-cdk-lib: versioned, SSE-S3, TLS only, no public access) holds only code objects, which the deployment's copy step writes and the Lambda service reads; server access logs would record only those two callers.",
      });
    }
    const copyFunction = stack.node.children.find(
      (child): child is lambda.Function => child instanceof lambda.Function && child.role === this.codeCopyRole,
    );
    if (copyFunction) {
      const deploymentOnly =
        "CDK's code-copy function runs only during deployments, invoked synchronously by CloudFormation as a custom resource";
      Validations.of(copyFunction).acknowledge(
        {
          id: 'Serverless-LambdaDLQ',
          reason: `${deploymentOnly}: a failure fails the deployment (which rolls back), so a dead-letter queue would hold nothing to act on.`,
        },
        {
          id: 'Serverless-LambdaDefaultMemorySize',
          reason: `${deploymentOnly}; it copies one S3 object with CopyObject (no data passes through it), for which aws-cdk-lib's default memory is enough.`,
        },
        {
          id: 'Serverless-LambdaTracing',
          reason: `${deploymentOnly}; X-Ray tracing of the copy would need xray:PutTraceSegments on Resource "*" for no operational use.`,
        },
      );
    }
    Aspects.of(this).add(new AcknowledgeCodeCopyWildcards(this.codeCopyRole));
  }
}

/**
 * The copy step's grants, written by aws-cdk-lib, use wildcards: read of the staged asset in the CDK
 * bootstrap bucket (`<bucket>/*`, the object's key is known only to the asset) and `s3:Abort*` /
 * `s3:DeleteObject*` / put under `web-function/*` of the code bucket (a new key per revision). Their
 * resources name the bootstrap bucket, whose name depends on the account, Region and qualifier, so
 * the findings are acknowledged as the synthesized policy states them: S3 actions and S3 objects only
 * (anything else still fails the checks).
 */
class AcknowledgeCodeCopyWildcards implements IAspect {
  constructor(private readonly role: iam.Role) {}

  visit(node: IConstruct): void {
    if (!(node instanceof iam.CfnPolicy) || node.node.scope !== this.role.node.tryFindChild('DefaultPolicy')) return;
    const document = Stack.of(node).resolve(node.policyDocument) as { Statement?: PolicyStatementJson[] };
    const findings = new Set<string>();
    for (const statement of document.Statement ?? []) {
      if (statement.Effect !== 'Allow') continue;
      for (const action of [statement.Action].flat()) {
        if (typeof action === 'string' && action.includes('*') && action.startsWith('s3:')) {
          findings.add(`Action::${action}`);
        }
      }
      for (const resource of [statement.Resource].flat().map(flattenReference)) {
        if (resource.includes('*') && isS3ObjectPattern(resource)) findings.add(`Resource::${resource}`);
      }
    }
    const reason =
      "aws-cdk-lib's Web Function code-copy step (WebFunctionCode.fromAssetToManagedBucket): it reads the staged asset from the CDK bootstrap bucket and writes, and on replacement deletes, the code object under web-function/ of the managed code bucket; the key of each object is known only at deployment, and this role serves that step alone.";
    Validations.of(node).acknowledge(
      ...[...findings].map((finding) => ({ id: `AwsSolutions-IAM5[${finding}]`, reason })),
    );
  }
}

type PolicyStatementJson = { Effect?: string; Action?: unknown; Resource?: unknown };

/** An S3 object pattern: `arn:<partition>:s3:::<bucket>/…` or `<Bucket.Arn>/…`. */
function isS3ObjectPattern(resource: string): boolean {
  return /^arn:(<AWS::Partition>|aws[a-z-]*):s3:::[^/*]+\/./.test(resource) || /^<[A-Za-z0-9]+\.Arn>\/./.test(resource);
}

/** A resolved CloudFormation value as cdk-nag writes it in a finding (`<Ref>`, `<Resource.Attribute>`, joins). */
function flattenReference(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value.replace(/\$\{/g, '<').replace(/\}/g, '>');
  const node = value as Record<string, unknown>;
  if (node['Fn::Join']) {
    const [delimiter, items] = node['Fn::Join'] as [string, unknown[]];
    return items.map(flattenReference).join(delimiter);
  }
  if (node['Fn::Sub']) return flattenReference(node['Fn::Sub']);
  if (node['Fn::GetAtt']) {
    const [resource, attribute] = node['Fn::GetAtt'] as [unknown, unknown];
    return `<${flattenReference(resource)}.${flattenReference(attribute)}>`;
  }
  if (node['Fn::ImportValue']) return flattenReference(node['Fn::ImportValue']);
  if (node.Ref) return `<${flattenReference(node.Ref)}>`;
  return JSON.stringify(value);
}

/**
 * The server bundled from source at synth (as the function URL's handler is: `writeBundle` by CDK's
 * local bundling, never Docker), staged to the stack's managed code bucket that the Web Function reads.
 */
function webFunctionCode(
  entry: string | undefined,
  copyOptions: lambda.WebFunctionCodeCopyOptions,
): lambda.WebFunctionCode {
  const source = path.resolve(entry ?? DEFAULT_WEB_FUNCTION_ENTRY);
  if (!existsSync(source)) {
    throw new Error(
      `McpWebFunctionGateway: the Web Function's server source (${source}) does not exist; the construct bundles it at synth (pass \`entry\`)`,
    );
  }
  const asset = bundledFromSource(source, lambda.Runtime.NODEJS_24_X.bundlingImage, (outputDir, projectRoot) =>
    writeBundle(source, outputDir, projectRoot, WEB_FUNCTION_BUILD_DIR),
  );
  return lambda.WebFunctionCode.fromAssetToManagedBucket(asset.path, { ...asset.options, copyOptions });
}
