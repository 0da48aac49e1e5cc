package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/constructs/queues"
)

// DashboardName is the SPEC name of the environment's dashboard (in the
// OrderFlow stack, the last one; docs/design.md#dashboard).
const DashboardName = "mercadofresco-operaciones"

// EnvironmentStacks are the stacks of one environment.
type EnvironmentStacks struct {
	Env       config.Environment
	Platform  *PlatformStack
	Network   *NetworkStack
	Data      *DataStack
	Messaging *MessagingStack
	Outbox    *OutboxStack
	OrderFlow *OrderFlowStack
}

// Build defines every stack of env under scope (normally the app). builder
// compiles the Go Lambdas; share one across environments.
func Build(scope constructs.Construct, env config.Environment, builder *gobuild.Builder) *EnvironmentStacks {
	platformStack := NewPlatformStack(scope, env)
	shared := platformStack.Shared(env, builder)
	network := NewNetworkStack(scope, shared)
	data := NewDataStack(scope, shared)
	messaging := NewMessagingStack(scope, shared, data, network)
	outbox := NewOutboxStack(scope, shared, network)
	orderFlow := NewOrderFlowStack(scope, shared, network, data, messaging)
	// Consumers deploy before producers: the outbox publishes PedidoCreado
	// to the order flow's starter and ERP rule (MF-CONTRACT-ORDER).
	// The publisher signs with the order flow's key (its role is admitted
	// by name there; this reference goes the way the dependency does).
	orderflow.GrantReadFrom(orderFlow.SigningKey.Secret, shared.DataKey, outbox.Publisher.Function.Function, network.Network.SecretsEndpoint)
	outbox.AddStackDependency(orderFlow.Stack, jsii.String("the order flow consumes the outbox's events: consumers deploy before producers (docs/design.md#event-contracts)"))
	// Last: every construct of the environment has added its widgets. The
	// dashboard goes in the stack that deploys last (it reads every stack).
	outbox.Dashboard = observability.NewDashboard(outbox.Stack, "Tablero", &observability.DashboardProps{
		Board:         shared.Dashboard,
		DashboardName: jsii.String(env.PhysicalName(DashboardName)),
	})
	es := &EnvironmentStacks{Env: env, Platform: platformStack, Network: network, Data: data, Messaging: messaging, Outbox: outbox, OrderFlow: orderFlow}
	// Last: every producer is admitted. The on-call role sends to the
	// queues it redrives only with MFA or the redrive session tag.
	for _, st := range es.Stacks() {
		queues.RequireElevation(st, env.RoleArn(env.Roles.Operator))
	}
	return es
}

// Stacks lists the environment's stacks.
func (e *EnvironmentStacks) Stacks() []awscdk.Stack {
	return []awscdk.Stack{e.Platform.Stack, e.Network.Stack, e.Data.Stack, e.Messaging.Stack, e.Outbox.Stack, e.OrderFlow.Stack}
}

// ApplyNag runs the cdk-nag AwsSolutions pack on everything under scope.
// Findings become synthesis errors; every acknowledgement is a
// core.AcknowledgeNag call next to the resource it concerns, with its reason.
// The project's own checks run on the synthesized templates (app.go,
// package checks).
func ApplyNag(scope constructs.IConstruct) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
		Verbose: jsii.Bool(true),
	}), nil)
}
