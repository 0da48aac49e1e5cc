package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/outbox"
	"github.com/mercadofresco/integration/constructs/queues"
)

// OutboxStack holds Aurora PostgreSQL (created per environment: the outbox
// table lives in the database of the orders it describes), the RDS Proxy,
// the schema migration and the outbox publisher, in the Network stack's VPC.
type OutboxStack struct {
	awscdk.Stack
	// Database is aurora-mf-escritor and its RDS Proxy.
	Database *outbox.Database
	// Migration creates the database roles and applies the schema once per
	// deploy (a custom resource); the functions deploy after it.
	Migration *outbox.Migration
	// Publisher is the publisher and cleanup functions, schedules and
	// alarms.
	Publisher *outbox.Publisher
	// Dashboard is the environment's dashboard (stacks.Build adds it once
	// every stack has contributed its widgets). It is in this stack because
	// the Outbox stack deploys last: it depends on every other one.
	Dashboard awscloudwatch.Dashboard
}

// NewOutboxStack creates the outbox stack of shared.Env in the network's
// VPC.
func NewOutboxStack(scope constructs.Construct, shared *Shared, netStack *NetworkStack) *OutboxStack {
	stack := newStack(scope, shared.Env, "Outbox", "transactional outbox on Aurora PostgreSQL")
	env := shared.Env
	net := netStack.Network
	db := outbox.NewDatabase(stack, "Aurora", &outbox.DatabaseProps{
		Context:           shared.Context,
		Vpc:               net.Vpc,
		Subnets:           net.DataSubnets(),
		RotationSubnets:   net.AppSubnets(),
		RotationEndpoint:  net.SecretsEndpoint,
		ClusterIdentifier: jsii.String(env.PhysicalName("aurora-mf-escritor")),
		ProxyName:         jsii.String(env.PhysicalName("proxy-mf-escritor")),
		BackupRetention:   awscdk.Duration_Days(jsii.Number(env.DatabaseBackupDays)),
		// The shop's order writers (lambdas/pedido-writer, as role mf_tienda).
		OutsideConnections: map[string]int{"shop": env.ShopDBConnections},
	})
	mig := outbox.NewMigration(stack, "Migraciones", &outbox.MigrationProps{
		Context:         shared.Context,
		Database:        db,
		Vpc:             net.Vpc,
		Subnets:         net.AppSubnets(),
		SecretsEndpoint: net.SecretsEndpoint,
		FunctionName:    jsii.String(env.PhysicalName("mf-outbox-migraciones")),
	})
	pub := outbox.NewPublisher(stack, "Publicador", &outbox.PublisherProps{
		Context:               shared.Context,
		Database:              db,
		Vpc:                   net.Vpc,
		Subnets:               net.AppSubnets(),
		EventsEndpoint:        net.EventsEndpoint,
		Bus:                   shared.Bus,
		ReservedConcurrency:   env.PublisherConcurrency,
		PublisherFunctionName: jsii.String(env.PhysicalName("mf-outbox-publicador")),
		CleanupFunctionName:   jsii.String(env.PhysicalName("mf-outbox-limpieza")),
	})
	queues.NameRole(pub.Function.Role, publisherRoleName(env)) // the bus admits it by name
	// New code runs against the schema it was built with.
	pub.Function.Function.Node().AddDependency(mig.Resource)
	pub.Cleanup.Function.Node().AddDependency(mig.Resource)
	return &OutboxStack{Stack: stack, Database: db, Migration: mig, Publisher: pub}
}
