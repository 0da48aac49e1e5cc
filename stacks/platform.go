package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/platform"
	"github.com/mercadofresco/integration/constructs/queues"
)

// PlatformStack holds the data key, the alerts topic, the data key's watch
// and the event bus: the sources of the platform context the other stacks
// receive (Shared).
type PlatformStack struct {
	awscdk.Stack
	DataKey awskms.Key
	Alerts  awssns.Topic
	// KeyWatch alerts on the data key's deletion, disabling and policy
	// changes (alertas-mercadofresco-clave and Alerts).
	KeyWatch *platform.KeyWatch
	// SendWatch alerts on every message the on-call role sends.
	SendWatch *events.Rule
	Bus       awsevents.EventBus
	Archive   awsevents.Archive
	// Schemas is the registry of the event contracts (schemas/).
	Schemas *events.SchemaRegistry

	context core.Context
}

// NewPlatformStack creates the platform stack of env.
func NewPlatformStack(scope constructs.Construct, env config.Environment) *PlatformStack {
	stack := newStack(scope, env, "Platform", "data key and its watch, alerts topic and event bus")
	s := &PlatformStack{Stack: stack, context: core.Context{
		EnvironmentName:    env.Name,
		LogRetention:       env.LogRetention,
		RemovalPolicy:      env.RemovalPolicy,
		DeletionProtection: jsii.Bool(env.DeletionProtection),
		Dashboard:          &observability.Board{},
	}}
	deployer, err := core.DeploymentRoleArn(stack)
	if err != nil {
		awscdk.Annotations_Of(stack).AddError(jsii.String(err.Error()))
	}
	s.DataKey = platform.NewDataKey(stack, "DataKey", &platform.DataKeyProps{
		Context:           s.context,
		Alias:             jsii.String(env.PhysicalName(platform.DataKeyAlias)),
		DeploymentRoleArn: deployer,
		Administrators:    []string{env.RoleArn(env.Roles.KeyAdmin)},
		BreakGlassRoleArn: env.RoleArn(env.Roles.BreakGlass),
	})
	s.context.DataKey = s.DataKey
	s.Alerts = platform.NewAlertsTopic(stack, "Alerts", &platform.AlertsTopicProps{
		Context:   s.context,
		TopicName: jsii.String(env.PhysicalName(platform.AlertsTopic)),
		Email:     env.AlarmEmail,
	})
	s.context.Alerts = s.Alerts
	s.KeyWatch = platform.NewKeyWatch(stack, "DataKeyWatch", &platform.KeyWatchProps{
		Context:             s.context,
		TopicName:           jsii.String(env.PhysicalName(platform.KeyAlertsTopic)),
		Email:               env.AlarmEmail,
		RuleName:            jsii.String(env.PhysicalName(platform.KeyWatchRule)),
		DeadLetterQueueName: jsii.String(env.PhysicalName(platform.KeyWatchRuleDLQName)),
		Trail:               env.AuditTrail,
	})
	s.SendWatch = platform.NewSendWatch(stack, "GuardiaWatch", &platform.SendWatchProps{
		Context:             s.context,
		RoleArn:             env.RoleArn(env.Roles.Operator),
		Trail:               env.AuditTrail,
		RuleName:            jsii.String(env.PhysicalName(platform.SendWatchRule)),
		DeadLetterQueueName: jsii.String(env.PhysicalName(platform.SendWatchRuleDLQName)),
	})
	s.Bus, s.Archive = platform.NewEventBus(stack, "Bus", &platform.EventBusProps{
		Context:          s.context,
		EventBusName:     jsii.String(env.PhysicalName(platform.EventBusName)),
		ArchiveRetention: awscdk.Duration_Days(jsii.Number(env.ArchiveRetentionDays)),
	})
	s.Schemas = events.NewSchemaRegistry(stack, "Esquemas", &events.SchemaRegistryProps{RegistryName: jsii.String(env.PhysicalName(events.RegistryName))})
	// Only the outbox publisher and the carts pipe put events on the bus.
	busGuard := queues.ForBus(s.Bus)
	busGuard.AdmitRoleName(publisherRoleName(env))
	busGuard.AdmitRoleName(cartsPipeRoleName(env))
	output(stack, "DataKeyArn", "", s.DataKey.KeyArn())
	output(stack, "AlertsTopicArn", "", s.Alerts.TopicArn())
	output(stack, "KeyAlertsTopicArn", "", s.KeyWatch.Topic.TopicArn())
	output(stack, "EventBusName", "", s.Bus.EventBusName())
	return s
}

// Shared returns what the other stacks of the environment receive: the
// platform context with builder, the environment and the bus.
func (s *PlatformStack) Shared(env config.Environment, builder *gobuild.Builder) *Shared {
	ctx := s.context
	ctx.Builder = builder
	return &Shared{Env: env, Bus: s.Bus, Context: ctx}
}
