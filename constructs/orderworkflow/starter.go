package orderworkflow

import (
	"fmt"
	"math"
	"time"

	"github.com/mercadofresco/integration/constructs/core"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/busrule"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/producers"
	"github.com/mercadofresco/integration/constructs/reliablequeue"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer/consumerapi"
)

// StarterTimeoutSeconds bounds one invocation of the starter: a batch of
// 10 StartExecution calls of 2 SDK attempts each takes well under a second;
// 20 s leaves room for a slow Step Functions without a long visibility
// timeout (6 x 20 s = 120 s).
const StarterTimeoutSeconds = 20

// StarterProps configures NewStarter. Bus, Workflow, EncryptionKey and
// AlarmTopic are required.
type StarterProps struct {
	// Bus is bus-mercadofresco.
	Bus awsevents.IEventBus
	// Workflow is the state machine the starter starts.
	Workflow *Workflow
	// Builder compiles lambdas/iniciar-pedido.
	Builder *golambda.Builder
	// MaximumConcurrency of the buffer's event source mapping: how many
	// starters run at once (the valve: a burst waits in the queue).
	MaximumConcurrency float64
	// QueueName, DeadLetterQueueName of the buffer; RuleName of the rule;
	// RuleDeadLetterQueueName of the rule target's DLQ; FunctionName of the
	// starter. Nil lets CloudFormation name them.
	QueueName, DeadLetterQueueName, RuleName, RuleDeadLetterQueueName, FunctionName *string
	// OperatorRoleArn is the on-call's role, admitted as a producer of the
	// buffer for the DLQ runbook's redrive (reliablequeue.Queue.AdmitRedriver).
	// Empty admits nobody.
	OperatorRoleArn string
	// ArchiveRetentionDays is how long the bus's archive keeps events, any
	// of which a replay can send to the starter's rule again. Required
	// (1..): the starter refuses events older than its window
	// (eventsapi.StarterWindow, 89 days, inside Step Functions' 90 days
	// of execution names), and synthesis fails unless the window covers an
	// archived event's longest pass (this retention + the rule's maximum
	// event age + the buffer's DLQ and one redrive), so that no replayed
	// order is refused and none can start a second execution.
	// docs/design.md#replay-windows.
	ArchiveRetentionDays float64
	// EncryptionKey (the data key), LogRetention, RemovalPolicy, AlarmTopic.
	EncryptionKey awskms.IKey
	LogRetention  awslogs.RetentionDays
	RemovalPolicy awscdk.RemovalPolicy
	AlarmTopic    awssns.ITopic
}

// Starter is the PedidoCreado rule, its SQS buffer and the starter
// function (lambdas/iniciar-pedido).
type Starter struct {
	constructs.Construct
	Rule     *busrule.Rule
	Buffer   *reliablequeue.Queue
	Function *golambda.Function
	// LongestPass is an archived event's longest pass to the starter,
	// which eventsapi.StarterWindow covers.
	LongestPass reliablequeue.Pass
}

// PedidoCreadoPattern matches the shop's order-created events.
func PedidoCreadoPattern() *awsevents.EventPattern {
	return &awsevents.EventPattern{
		Source:     jsii.Strings(eventsapi.SourceTienda),
		DetailType: jsii.Strings(eventsapi.TypePedidoCreado),
	}
}

// NewStarter wires bus → rule → SQS buffer → starter → StartExecution.
// Why a buffer and not a rule targeting the state machine: a rule cannot
// choose the execution name, so a duplicate event would start a second
// execution (and charge the card twice); the starter names the execution
// after the order (starter.ExecutionName), which Step Functions keeps
// unique for 90 days.
func NewStarter(scope constructs.Construct, id string, props *StarterProps) *Starter {
	if props == nil {
		props = &StarterProps{}
	}
	c := constructs.NewConstruct(scope, jsii.String(id))
	s := &Starter{Construct: c}
	fail := func(format string, a ...any) {
		awscdk.Annotations_Of(c).AddError(jsii.String(fmt.Sprintf("orderworkflow.Starter %s: %s", *c.Node().Path(), fmt.Sprintf(format, a...))))
	}
	if props.Workflow == nil {
		fail("Workflow is required")
	}
	s.Buffer = reliablequeue.New(c, "Buffer", &reliablequeue.Props{
		QueueName:           props.QueueName,
		DeadLetterQueueName: props.DeadLetterQueueName,
		Context:             core.Context{DataKey: props.EncryptionKey, Alerts: props.AlarmTopic, RemovalPolicy: props.RemovalPolicy},
		// The lesson's 4 receives: 4 x 2 SDK attempts = 8 StartExecution
		// calls per order at worst; a throttled start (ExecutionLimitExceeded)
		// is rare with MaximumConcurrency well below the starts quota.
		MaxReceiveCount: 4,
		// An order waiting more than 30 min to start is a customer waiting.
		OldestMessageAgeThreshold: awscdk.Duration_Minutes(jsii.Number(30)),
	})
	s.Rule = busrule.New(c, "PedidoCreado", &busrule.Props{
		Bus:                 props.Bus,
		RuleName:            props.RuleName,
		Description:         "PedidoCreado (the shop's outbox) -> the buffer of the order workflow's starter",
		Pattern:             PedidoCreadoPattern(),
		TargetLabel:         "the starter buffer " + s.Buffer.QueueName,
		DeadLetterQueueName: props.RuleDeadLetterQueueName,
		Context:             core.Context{DataKey: props.EncryptionKey, Alerts: props.AlarmTopic, RemovalPolicy: props.RemovalPolicy},
		Target: func(o busrule.TargetOptions) awsevents.IRuleTarget {
			return awseventstargets.NewSqsQueue(s.Buffer.Queue, &awseventstargets.SqsQueueProps{
				DeadLetterQueue: o.DeadLetterQueue, MaxEventAge: o.MaxEventAge, RetryAttempts: jsii.Number(o.RetryAttempts),
			})
		},
	})
	producers.ForQueue(s.Buffer.Queue).AdmitRule(s.Rule.Rule)
	s.Buffer.AdmitRedriver(props.OperatorRoleArn)
	smArn := jsii.String("")
	if props.Workflow != nil {
		smArn = props.Workflow.StateMachine.StateMachineArn()
	}
	s.Function = golambda.NewFunction(c, "Iniciar", &golambda.Props{
		Entry:        "lambdas/iniciar-pedido",
		Builder:      props.Builder,
		FunctionName: props.FunctionName,
		Description:  jsii.String("Starts " + StateMachineName + " once per order (execution named after the order)"),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(StarterTimeoutSeconds)),
		MemorySize:   128,
		Environment: map[string]*string{
			"STATE_MACHINE_ARN":              smArn,
			consumerapi.EnvIdempotencyWindow: jsii.String(consumerapi.FormatWindow(eventsapi.StarterWindow)),
		},
		EncryptionKey:    props.EncryptionKey,
		LogRetention:     props.LogRetention,
		LogRemovalPolicy: props.RemovalPolicy,
		AlarmTopic:       props.AlarmTopic,
		Dependencies: []golambda.Dependency{
			{Name: "states:StartExecution", AttemptsEnv: []string{golambda.EnvSDKMaxAttempts}},
			{Name: "sqs:dlq", AttemptsEnv: []string{golambda.EnvSDKMaxAttempts}},
		},
	})
	if props.Workflow != nil {
		props.Workflow.GrantStartExecution(s.Function.Function)
	}
	s.checkReplays(props, fail)
	mc := props.MaximumConcurrency
	if mc == 0 {
		mc = reliablequeue.MinMaximumConcurrency
	}
	s.Buffer.AddConsumer(s.Function.Function, reliablequeue.ConsumerOptions{
		MaximumConcurrency: mc,
		BatchSize:          10,
	})
	return s
}

// checkReplays fails synthesis unless the starter's window covers the
// longest pass of an archived event: replayed when the archive is about to
// drop it, delivered by the rule within its maximum event age, then at most
// the buffer's DLQ retention and one redrive.
func (s *Starter) checkReplays(props *StarterProps, fail func(string, ...any)) {
	days := props.ArchiveRetentionDays
	if days < 1 || days != math.Trunc(days) {
		fail("ArchiveRetentionDays must be a whole number of days, at least 1 (got %v; 0 would keep events forever, and a replay of an event older than %.0f days would start a second execution)",
			days, eventsapi.ExecutionNameRetention.Hours()/24)
		return
	}
	ruleAge, err := core.Seconds(s.Rule.MaxEventAge)
	if err != nil {
		fail("%v", err)
		return
	}
	upstream := time.Duration(days)*24*time.Hour + time.Duration(ruleAge)*time.Second
	s.LongestPass = s.Buffer.LongestPass(upstream, 0)
	if err := s.LongestPass.Covers(eventsapi.StarterWindow); err != nil {
		fail("an archive of %v days: %v", days, err)
	}
}
