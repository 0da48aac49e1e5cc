package outbox

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/removal"
	"github.com/mercadofresco/integration/lambdas/outbox/outboxapi"
)

// Property names and resource type of the schema's custom resource; the
// handler (lambdas/outbox/migrator) reads the same names.
const (
	MigrationResourceType = "Custom::OutboxEsquema"
	migrationPropHash     = "MigracionesHash"
	migrationPropRoles    = "Roles"
	// MigrationTimeoutSeconds bounds one run of the migration function.
	MigrationTimeoutSeconds = 300
)

// MigrationProps configures NewMigration. Database, Vpc, SecretsEndpoint
// and EncryptionKey are required.
type MigrationProps struct {
	Database *Database
	// Vpc and Subnets place the function (Network.AppSubnets()).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
	// SecretsEndpoint is the Secrets Manager interface endpoint (the
	// function reads the master secret through it).
	SecretsEndpoint awsec2.IInterfaceVpcEndpoint
	// Builder compiles the function (share the app's).
	Builder *golambda.Builder
	// EncryptionKey encrypts the function's environment and both log groups
	// (the function's and the provider framework's).
	EncryptionKey awskms.IKey
	// LogRetention and LogRemovalPolicy of both log groups.
	LogRetention     awslogs.RetentionDays
	LogRemovalPolicy awscdk.RemovalPolicy
	// AlarmTopic receives the function's Errors and Throttles alarms.
	AlarmTopic awssns.ITopic
	// FunctionName of the migration function. Nil lets CloudFormation name it.
	FunctionName *string
}

// Migration applies the outbox's schema once per deploy: a CloudFormation
// custom resource whose properties are the migrations' hash and the role
// names, so it is updated (and its handler runs) exactly when a deploy
// changes either. The handler (lambdas/outbox-migraciones) connects as the
// cluster's master user only to create the roles, then as the owner role
// through the proxy to migrate and grant. It is the only function that may
// read the master secret; no function on the hot path can.
type Migration struct {
	constructs.Construct
	// Function is the handler.
	Function *golambda.Function
	// Provider is the CDK custom resource provider framework in front of it.
	Provider customresources.Provider
	// ProviderLogs is the provider framework function's log group.
	ProviderLogs awslogs.LogGroup
	// Resource is the custom resource. Make the functions that need the
	// schema depend on it.
	Resource awscdk.CustomResource
	// SecurityGroup is the function's.
	SecurityGroup awsec2.SecurityGroup
}

// NewMigration creates the function, the provider and the custom resource.
// Missing props are synthesis errors; the construct is still built whole.
func NewMigration(scope constructs.Construct, id string, props *MigrationProps) *Migration {
	if props == nil {
		props = &MigrationProps{}
	}
	this := constructs.NewConstruct(scope, jsii.String(id))
	m := &Migration{Construct: this}
	invalid := func(msg string) { awscdk.Annotations_Of(this).AddError(jsii.String("outbox.Migration: " + msg)) }
	p := *props
	props = &p
	if props.Database == nil {
		invalid("Database is required")
		props.Database = NewDatabase(this, "MissingDatabase", &DatabaseProps{Vpc: props.Vpc})
	}
	if props.Vpc == nil {
		invalid("Vpc is required")
		props.Vpc = props.Database.vpc
		props.Subnets = props.Database.subnets
	}
	if props.SecretsEndpoint == nil {
		invalid("SecretsEndpoint is required: the function reads the master secret through it")
	}
	if props.EncryptionKey == nil {
		invalid("EncryptionKey is required (the data key alias/mercadofresco-datos)")
		props.EncryptionKey = awskms.Key_FromKeyArn(this, jsii.String("MissingKey"), jsii.String("arn:aws:kms:eu-west-1:000000000000:key/missing"))
	}
	db := props.Database
	retention := props.LogRetention
	if retention == "" {
		retention = awslogs.RetentionDays_ONE_MONTH
	}

	m.SecurityGroup = awsec2.NewSecurityGroup(this, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              props.Vpc,
		Description:      jsii.String("Outbox schema migration: to the cluster, the RDS Proxy and the Secrets Manager endpoint only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	env := db.Environment(db.Roles.Owner)
	delete(env, "DB_USER") // the owner role comes with the event (its Roles property)
	env["DB_MASTER_SECRET_ARN"] = db.Secret.SecretArn()
	m.Function = golambda.NewFunction(this, "Funcion", &golambda.Props{
		Entry:                        "lambdas/outbox-migraciones",
		Builder:                      props.Builder,
		FunctionName:                 props.FunctionName,
		Description:                  jsii.String("Outbox schema: creates the database roles, applies the migrations and grants (custom resource, once per deploy)"),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(MigrationTimeoutSeconds)),
		MemorySize:                   256,
		Environment:                  env,
		EncryptionKey:                props.EncryptionKey,
		LogRetention:                 retention,
		LogRemovalPolicy:             props.LogRemovalPolicy,
		AlarmTopic:                   props.AlarmTopic,
		ReservedConcurrentExecutions: jsii.Number(1),
		Vpc:                          props.Vpc,
		VpcSubnets:                   props.Subnets,
		SecurityGroups:               &[]awsec2.ISecurityGroup{m.SecurityGroup},
	})

	// Network: the master user's step goes straight to the cluster (the
	// proxy has no master credentials), the owner's through the proxy.
	db.Cluster.Connections().AllowDefaultPortFrom(m.SecurityGroup, jsii.String("outbox schema migration (master user, role creation only)"))
	db.AllowFrom(m.SecurityGroup, "outbox schema migration (owner role)")
	if props.SecretsEndpoint != nil {
		m.SecurityGroup.Connections().AllowTo(props.SecretsEndpoint, awsec2.Port_Tcp(jsii.Number(443)), jsii.String("outbox schema migration reads the master secret"))
	}

	// IAM: the master secret (read only, decrypted through Secrets Manager
	// only) and rds-db:connect as the owner role. Statements of our own
	// rather than Secret.GrantRead: the key's policy lives in the platform
	// stack, and a grant through it would make that stack depend on this one.
	role := m.Function.Role
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"),
		Resources: jsii.Strings(*db.Secret.SecretArn()),
	}))
	core.GrantKey(props.EncryptionKey, role, "secretsmanager", "kms:Decrypt")
	db.GrantConnect(role, db.Roles.Owner)

	// The provider framework's function: our log group (retention, data
	// key) and a role of our own (no managed policy).
	m.ProviderLogs = awslogs.NewLogGroup(this, jsii.String("ProveedorLogs"), &awslogs.LogGroupProps{
		Retention:     retention,
		EncryptionKey: props.EncryptionKey,
		RemovalPolicy: removal.For(props.LogRemovalPolicy, removal.Data),
	})
	frameworkRole := awsiam.NewRole(this, jsii.String("ProveedorRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("CDK custom resource provider framework of the outbox schema migration"),
	})
	frameworkRole.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*m.ProviderLogs.LogGroupArn() + ":*"),
	}))
	m.Provider = customresources.NewProvider(this, jsii.String("Proveedor"), &customresources.ProviderProps{
		OnEventHandler:                m.Function.Function,
		LogGroup:                      m.ProviderLogs,
		FrameworkOnEventRole:          frameworkRole,
		ProviderFunctionEnvEncryption: props.EncryptionKey,
	})

	m.Resource = awscdk.NewCustomResource(this, jsii.String("Esquema"), &awscdk.CustomResourceProps{
		ServiceToken: m.Provider.ServiceToken(),
		ResourceType: jsii.String(MigrationResourceType),
		Properties: &map[string]interface{}{
			migrationPropHash: outboxapi.SchemaHash(),
			migrationPropRoles: map[string]interface{}{
				"owner": db.Roles.Owner, "publisher": db.Roles.Publisher,
				"cleanup": db.Roles.Cleanup, "writer": db.Roles.Writer,
			},
		},
	})
	// The cluster's instances and the proxy's target must be up first.
	m.Resource.Node().AddDependency(db.Cluster, db.Proxy)

	// Acknowledged once the grants exist (suppressions reach existing
	// children only), on the framework role's policy alone.
	logicalID := func(c constructs.IConstruct) string {
		return *awscdk.Stack_Of(c).GetLogicalId(c.Node().DefaultChild().(awscdk.CfnElement))
	}
	fnID := logicalID(m.Function.Function)
	if pol, ok := frameworkRole.Node().TryFindChild(jsii.String("DefaultPolicy")).(awsiam.Policy); ok {
		cdknag.NagSuppressions_AddResourceSuppressions(pol, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("The provider framework invokes this one handler; the ':*' the CDK adds covers its versions, no other function. The log-stream wildcard is the framework's own log group's streams."),
			AppliesTo: &[]interface{}{
				jsii.String("Resource::<" + fnID + ".Arn>:*"),
				jsii.String("Resource::<" + logicalID(m.ProviderLogs) + ".Arn>:*"),
			},
		}}, jsii.Bool(true))
	}
	if fw, ok := m.Provider.Node().TryFindChild(jsii.String("framework-onEvent")).(constructs.IConstruct); ok {
		cdknag.NagSuppressions_AddResourceSuppressions(fw, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-L1"),
			Reason: jsii.String("The CDK's custom resource provider framework function: its Node.js runtime is the one the CDK version ships and tests; it runs only during deploys."),
		}}, jsii.Bool(true))
	}
	return m
}
