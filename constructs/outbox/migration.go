package outbox

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// The schema's custom resource, handled by outbox.Migrator
// (lambdas/outbox).
const (
	MigrationResourceType = "Custom::OutboxEsquema"
	// MigrationTimeoutSeconds bounds one run of the migration function.
	MigrationTimeoutSeconds = 300
)

// MigrationProps configures NewMigration. Database, Vpc, SecretsEndpoint
// and the Context's DataKey are required.
type MigrationProps struct {
	core.Context
	Database *Database
	// Vpc and Subnets place the function (Network.AppSubnets()).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
	// SecretsEndpoint is the Secrets Manager interface endpoint (the
	// function reads the master secret through it).
	SecretsEndpoint awsec2.IInterfaceVpcEndpoint
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
// Every problem of props is reported at synth (the wiring to what is
// missing is left out, the construct is whole).
func NewMigration(scope constructs.Construct, id string, props *MigrationProps) *Migration {
	this, v, props := core.Begin(scope, id, "outbox.Migration", props)
	m := &Migration{Construct: this}
	props.Require(v, core.DataKey)
	db := props.Database
	v.If(db == nil, "Database is required")
	vpc, subnets := core.RequireVpc(v, this, props.Vpc, props.Subnets, "the function reaches the cluster and the proxy")

	m.SecurityGroup = awsec2.NewSecurityGroup(this, jsii.String("SecurityGroup"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("Outbox schema migration: to the cluster, the RDS Proxy and the Secrets Manager endpoint only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	roles, env := lambdaapi.DefaultDBRoles(), map[string]*string{}
	if db != nil {
		roles, env = db.Roles, db.Environment(db.Roles.Owner, MigrationPoolMax)
		delete(env, lambdaapi.EnvDBUser) // the owner role comes with the event (its Roles property)
		env[lambdaapi.EnvDBMasterSecretARN] = db.Secret.SecretArn()
	}
	m.Function = golambda.NewFunction(this, "Funcion", &golambda.Props{
		Context:                      props.Context,
		Entry:                        "lambdas/outbox-migraciones",
		FunctionName:                 props.FunctionName,
		Description:                  jsii.String("Outbox schema: creates the database roles, applies the migrations and grants (custom resource, once per deploy)"),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(MigrationTimeoutSeconds)),
		Environment:                  env,
		ReservedConcurrentExecutions: jsii.Number(1),
		Vpc:                          vpc,
		VpcSubnets:                   subnets,
		SecurityGroups:               &[]awsec2.ISecurityGroup{m.SecurityGroup},
	})
	dependency.ReadSecretsThrough(v, m.SecurityGroup, props.SecretsEndpoint, "outbox schema migration reads the master secret")
	if db != nil {
		// The master user's step goes straight to the cluster (the proxy
		// has no master credentials), the owner's through the proxy.
		db.Cluster.Connections().AllowDefaultPortFrom(m.SecurityGroup, jsii.String("outbox schema migration (master user, role creation only)"))
		db.AllowFrom(m.SecurityGroup, "outbox schema migration (owner role)")
		// The master secret, read only, decrypted through Secrets Manager
		// only, and rds-db:connect as the owner role.
		dependency.GrantRead(db.Secret, props.DataKey, m.Function.Role)
		db.GrantConnect(m.Function.Role, db.Roles.Owner)
	}

	// The provider framework's function: our log group (retention, data
	// key) and a role of our own (no managed policy).
	m.ProviderLogs = props.LogGroup(this, "ProveedorLogs", nil)
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
		ProviderFunctionEnvEncryption: props.DataKey,
	})

	m.Resource = awscdk.NewCustomResource(this, jsii.String("Esquema"), &awscdk.CustomResourceProps{
		ServiceToken: m.Provider.ServiceToken(),
		ResourceType: jsii.String(MigrationResourceType),
		Properties: &map[string]interface{}{
			lambdaapi.MigrationPropertyHash: lambdaapi.SchemaHash(),
			lambdaapi.MigrationPropertyRoles: map[string]interface{}{
				"owner": roles.Owner, "publisher": roles.Publisher,
				"cleanup": roles.Cleanup, "writer": roles.Writer,
			},
		},
	})
	if db != nil {
		// The cluster's instances and the proxy's target must be up first.
		m.Resource.Node().AddDependency(db.Cluster, db.Proxy)
	}

	// Acknowledged once the grants exist (suppressions reach existing
	// children only), on the framework role's policy alone.
	fnID := core.LogicalID(m.Function.Function)
	if pol, ok := frameworkRole.Node().TryFindChild(jsii.String("DefaultPolicy")).(awsiam.Policy); ok {
		core.AcknowledgeNag(pol, true, "AwsSolutions-IAM5", "The provider framework invokes this one handler; the ':*' the CDK adds covers its versions, no other function. The log-stream wildcard is the framework's own log group's streams.", "Resource::<"+fnID+".Arn>:*", "Resource::<"+core.LogicalID(m.ProviderLogs)+".Arn>:*")
	}
	if fw, ok := m.Provider.Node().TryFindChild(jsii.String("framework-onEvent")).(constructs.IConstruct); ok {
		core.AcknowledgeNag(fw, true, "AwsSolutions-L1", "The CDK's custom resource provider framework function: its Node.js runtime is the one the CDK version ships and tests; it runs only during deploys.")
	}
	return m
}
