package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/outbox"
)

// OutboxStack holds the VPC, Aurora PostgreSQL, the RDS Proxy and the outbox
// publisher.
//
// Aurora is created per environment (not imported): the outbox table must
// live in the same database as the orders it describes, and this stack owns
// that database (aurora-mf-escritor), its proxy and its network. Deletion
// protection and the removal policy come from config.
type OutboxStack struct {
	awscdk.Stack
	// Network is the isolated VPC with the EventBridge and Secrets Manager
	// endpoints.
	Network *outbox.Network
	// Database is aurora-mf-escritor and its RDS Proxy.
	Database *outbox.Database
	// Publisher is the publisher and cleanup functions, schedules and
	// alarms.
	Publisher *outbox.Publisher
}

// NewOutboxStack creates the outbox stack of shared.Env.
func NewOutboxStack(scope constructs.Construct, shared *Shared) *OutboxStack {
	stack := newStack(scope, shared.Env, "Outbox", "transactional outbox on Aurora PostgreSQL")
	env := shared.Env
	net := outbox.NewNetwork(stack, "Red", &outbox.NetworkProps{
		MaxAzs:           float64(len(env.AvailabilityZones)),
		FlowLogKey:       shared.DataKey,
		FlowLogRetention: env.LogRetention,
		RemovalPolicy:    env.RemovalPolicy,
	})
	db := outbox.NewDatabase(stack, "Aurora", &outbox.DatabaseProps{
		Vpc:                net.Vpc,
		Subnets:            net.DataSubnets(),
		RotationSubnets:    net.AppSubnets(),
		RotationEndpoint:   net.SecretsEndpoint,
		ClusterIdentifier:  jsii.String(env.PhysicalName("aurora-mf-escritor")),
		ProxyName:          jsii.String(env.PhysicalName("proxy-mf-escritor")),
		EncryptionKey:      shared.DataKey,
		LogRetention:       env.LogRetention,
		RemovalPolicy:      env.RemovalPolicy,
		DeletionProtection: jsii.Bool(env.DeletionProtection),
		AlarmTopic:         shared.Alerts,
	})
	pub := outbox.NewPublisher(stack, "Publicador", &outbox.PublisherProps{
		Database:            db,
		Vpc:                 net.Vpc,
		Subnets:             net.AppSubnets(),
		EventsEndpoint:      net.EventsEndpoint,
		Bus:                 shared.Bus,
		Environment:         env.Name,
		Builder:             shared.Builder,
		EncryptionKey:       shared.DataKey,
		LogRetention:        env.LogRetention,
		LogRemovalPolicy:    env.RemovalPolicy,
		AlarmTopic:          shared.Alerts,
		ReservedConcurrency: env.PublisherConcurrency,
		FunctionNamePrefix:  jsii.String(env.PhysicalName("mf-outbox")),
	})
	return &OutboxStack{Stack: stack, Network: net, Database: db, Publisher: pub}
}
