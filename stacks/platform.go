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
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/platform"
)

// PlatformStack holds the data key, the alerts topic, the data key's watch
// and the event bus.
type PlatformStack struct {
	awscdk.Stack
	DataKey awskms.Key
	Alerts  awssns.Topic
	// KeyWatch alerts on the data key's deletion, disabling and policy
	// changes (alertas-mercadofresco-clave and Alerts).
	KeyWatch *platform.KeyWatch
	Bus      awsevents.EventBus
	Archive  awsevents.Archive
}

// NewPlatformStack creates the platform stack of env.
func NewPlatformStack(scope constructs.Construct, env config.Environment) *PlatformStack {
	stack := newStack(scope, env, "Platform", "data key and its watch, alerts topic and event bus")
	s := &PlatformStack{Stack: stack}
	deployer, err := platform.DeploymentRoleArn(stack)
	if err != nil {
		awscdk.Annotations_Of(stack).AddError(jsii.String(err.Error()))
	}
	s.DataKey = platform.NewDataKey(stack, "DataKey", &platform.DataKeyProps{
		Alias:             jsii.String(env.PhysicalName(platform.DataKeyAlias)),
		RemovalPolicy:     env.RemovalPolicy,
		DeploymentRoleArn: deployer,
		Administrators:    []string{env.RoleArn(env.Roles.KeyAdmin)},
		BreakGlassRoleArn: env.RoleArn(env.Roles.BreakGlass),
	})
	s.Alerts = platform.NewAlertsTopic(stack, "Alerts", &platform.AlertsTopicProps{
		TopicName: jsii.String(env.PhysicalName(platform.AlertsTopic)),
		Key:       s.DataKey,
		Email:     env.AlarmEmail,
	})
	s.KeyWatch = platform.NewKeyWatch(stack, "DataKeyWatch", &platform.KeyWatchProps{
		Key:                 s.DataKey,
		Alerts:              s.Alerts,
		TopicName:           jsii.String(env.PhysicalName(platform.KeyAlertsTopic)),
		Email:               env.AlarmEmail,
		RuleName:            jsii.String(env.PhysicalName(platform.KeyWatchRule)),
		DeadLetterQueueName: jsii.String(env.PhysicalName(platform.KeyWatchRuleDLQName)),
		RemovalPolicy:       env.RemovalPolicy,
	})
	s.Bus, s.Archive = platform.NewEventBus(stack, "Bus", &platform.EventBusProps{
		EventBusName:         jsii.String(env.PhysicalName(platform.EventBusName)),
		ArchiveRetentionDays: env.ArchiveRetentionDays,
		Key:                  s.DataKey,
	})
	output(stack, "DataKeyArn", "", s.DataKey.KeyArn())
	output(stack, "AlertsTopicArn", "", s.Alerts.TopicArn())
	output(stack, "KeyAlertsTopicArn", "", s.KeyWatch.Topic.TopicArn())
	output(stack, "EventBusName", "", s.Bus.EventBusName())
	return s
}

// Shared returns what the other stacks of the environment receive.
func (s *PlatformStack) Shared(env config.Environment, builder *golambda.Builder) *Shared {
	return &Shared{Env: env, Bus: s.Bus, Context: core.Context{
		EnvironmentName:    env.Name,
		Builder:            builder,
		DataKey:            s.DataKey,
		Alerts:             s.Alerts,
		LogRetention:       env.LogRetention,
		RemovalPolicy:      env.RemovalPolicy,
		DeletionProtection: jsii.Bool(env.DeletionProtection),
	}}
}
