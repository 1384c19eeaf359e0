import { Arn, CfnResource, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as appconfig from 'aws-cdk-lib/aws-appconfig';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import type { GatewayConfig } from '../lambda/config/schema';
import { gatewayConfigJsonSchema } from './config/json-schema';

/** The only AppConfig Data actions the runtime performs (lambda/config/source.ts), on one configuration. */
export const APPCONFIG_ACTIONS = ['appconfig:GetLatestConfiguration', 'appconfig:StartConfigurationSession'] as const;

/**
 * The JSON Schema AppConfig checks a new configuration version against before it can be deployed,
 * generated from the same zod schema the function validates with (draft-04, what AppConfig's JSON
 * Schema validator reads). Cross-field checks (duplicate target names, …) are not expressible there;
 * the function still refuses such a document at its next cold start, naming the field.
 */
export function configurationJsonSchema(): string {
  return JSON.stringify(gatewayConfigJsonSchema('draft-04'));
}

export interface GatewayAppConfigProps {
  /** The first configuration version (the validated configuration from context). Its tableName is dropped. */
  readonly config: GatewayConfig;
  /** @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The gateway's configuration in AWS AppConfig: an application, an environment, a hosted configuration
 * profile with a JSON Schema validator, and a first version deployed at once. Later changes are new
 * hosted versions plus an AppConfig deployment (no stack deployment); each Lambda execution environment
 * reads the deployed version when it starts. The function is told the table by GATEWAY_TABLE_NAME, so the
 * document carries no table name.
 */
export class GatewayAppConfig extends Construct {
  readonly application: appconfig.Application;
  readonly environment: appconfig.Environment;
  readonly configuration: appconfig.HostedConfiguration;
  /** `<applicationId>/<environmentId>/<configurationProfileId>`, the value of GATEWAY_APPCONFIG. */
  readonly locator: string;
  /** The ARN the read actions are granted on: exactly this profile in this environment. */
  readonly configurationArn: string;

  constructor(scope: Construct, id: string, props: GatewayAppConfigProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const { tableName: _ignored, ...document } = props.config;
    this.application = new appconfig.Application(this, 'Application', {
      description: `MCP gateway configuration (${stack.stackName})`,
    });
    this.environment = new appconfig.Environment(this, 'Environment', {
      application: this.application,
      description: 'The environment the gateway function reads',
    });
    this.configuration = new appconfig.HostedConfiguration(this, 'Configuration', {
      application: this.application,
      description: 'Gateway configuration (lambda/config/schema.ts); tableName is set by the stack',
      content: appconfig.ConfigurationContent.fromInlineJson(JSON.stringify(document, null, 2)),
      validators: [appconfig.JsonSchemaValidator.fromInline(configurationJsonSchema())],
      deploymentStrategy: new appconfig.DeploymentStrategy(this, 'AllAtOnce', {
        rolloutStrategy: appconfig.RolloutStrategy.ALL_AT_ONCE,
        description: 'MCP gateway: a new configuration reaches every new execution environment at once',
      }),
      deployTo: [this.environment],
      // AppConfig refuses to delete a profile read in the last hour; `destroy` means delete anyway.
      deletionProtectionCheck:
        props.removalPolicy === RemovalPolicy.DESTROY
          ? appconfig.DeletionProtectionCheck.BYPASS
          : appconfig.DeletionProtectionCheck.ACCOUNT_DEFAULT,
    });
    // Kept with the stack's data by default: a configuration edited through AppConfig is not in the context.
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    for (const child of this.node.findAll()) {
      if (child instanceof CfnResource) child.applyRemovalPolicy(removalPolicy);
    }
    this.locator = [
      this.application.applicationId,
      this.environment.environmentId,
      this.configuration.configurationProfileId,
    ].join('/');
    this.configurationArn = Arn.format(
      {
        service: 'appconfig',
        resource: 'application',
        resourceName: `${this.application.applicationId}/environment/${this.environment.environmentId}/configuration/${this.configuration.configurationProfileId}`,
      },
      stack,
    );
  }

  /** StartConfigurationSession and GetLatestConfiguration on this configuration only. */
  grantRead(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: [...APPCONFIG_ACTIONS],
      resourceArns: [this.configurationArn],
    });
  }
}
