package orderflow

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// StarterTimeout bounds one invocation of the starter: a batch of 10
// StartExecution calls of 2 SDK attempts each takes well under a second;
// 20 s leaves room for a slow Step Functions without a long visibility
// timeout (6 x 20 s = 120 s).
const StarterTimeout = 20 * time.Second

// StarterProps configures NewStarter. Bus, Workflow, ArchiveRetention and
// the Context's DataKey and Alerts are required.
type StarterProps struct {
	core.Context
	// Bus is bus-mercadofresco.
	Bus awsevents.IEventBus
	// Workflow is the state machine the starter starts.
	Workflow *Workflow
	// MaximumConcurrency of the buffer's event source mapping: how many
	// starters run at once (the valve: a burst waits in the queue).
	MaximumConcurrency float64
	// QueueName, DeadLetterQueueName of the buffer; RuleName of the rule;
	// RuleDeadLetterQueueName of the rule target's DLQ; FunctionName of the
	// starter. Nil lets CloudFormation name them.
	QueueName, DeadLetterQueueName, RuleName, RuleDeadLetterQueueName, FunctionName *string
	// OperatorRoleArn is the on-call's role, admitted as a producer of the
	// buffer for the DLQ runbook's redrive. Empty admits nobody.
	OperatorRoleArn string
	// ArchiveRetention is how long the bus's archive keeps events (whole
	// days, at least 1). Synthesis fails unless the starter's window
	// (eventsapi.StarterWindow, 89 days) covers an archived event's longest
	// pass to it (docs/design.md#replay-windows).
	ArchiveRetention awscdk.Duration
	// Vpc and Subnets place the starter (nil: outside a VPC); its security
	// group allows HTTPS out only. It calls Step Functions and SQS (its
	// DLQ), so the subnets must reach both: the egress subnets
	// (docs/design.md#control-tower).
	Vpc     awsec2.IVpc
	Subnets *awsec2.SubnetSelection
}

// Starter is the PedidoCreado rule, its SQS buffer and the starter
// function (lambdas/iniciar-pedido).
type Starter struct {
	constructs.Construct
	Rule     *events.Rule
	Buffer   *queues.Queue
	Function *golambda.Function
	// LongestPass is an archived event's longest pass to the starter,
	// which eventsapi.StarterWindow covers.
	LongestPass queues.Pass
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
	c, v, props := core.Begin(scope, id, "orderflow.Starter", props)
	s := &Starter{Construct: c}
	v.If(props.Workflow == nil, "Workflow is required")
	s.Buffer = queues.NewQueue(c, "Buffer", &queues.QueueProps{
		Context:             props.Context,
		QueueName:           props.QueueName,
		DeadLetterQueueName: props.DeadLetterQueueName,
		// 4 receives x 2 SDK attempts = 8 StartExecution calls per order at
		// worst; a throttled start (ExecutionLimitExceeded) is rare with
		// MaximumConcurrency well below the starts quota.
		MaxReceiveCount: 4,
		// An order waiting more than 30 min to start is a customer waiting.
		OldestMessageAgeThreshold: awscdk.Duration_Minutes(jsii.Number(30)),
	})
	s.Rule = events.NewRule(c, "PedidoCreado", &events.RuleProps{
		Context:             props.Context,
		Bus:                 props.Bus,
		RuleName:            props.RuleName,
		Description:         "PedidoCreado (the shop's outbox) -> the buffer of the order workflow's starter",
		Pattern:             PedidoCreadoPattern(),
		TargetLabel:         "the starter buffer " + s.Buffer.QueueName,
		DeadLetterQueueName: props.RuleDeadLetterQueueName,
		Target:              events.SqsTarget(s.Buffer.Queue),
	})
	s.Buffer.AdmitRedriver(props.OperatorRoleArn)
	smArn := jsii.String("")
	if props.Workflow != nil {
		smArn = props.Workflow.StateMachine.StateMachineArn()
	}
	var groups *[]awsec2.ISecurityGroup
	if props.Vpc != nil {
		sg := dependency.NewSecurityGroup(c, "GrupoSeguridad", props.Vpc,
			"lambdas/iniciar-pedido: HTTPS to Step Functions and SQS", "HTTPS: Step Functions and SQS")
		groups = &[]awsec2.ISecurityGroup{sg}
	}
	s.Function = golambda.NewFunction(c, "Iniciar", &golambda.Props{
		Context:        props.Context,
		Vpc:            props.Vpc,
		VpcSubnets:     props.Subnets,
		SecurityGroups: groups,
		Entry:          "lambdas/iniciar-pedido",
		FunctionName:   props.FunctionName,
		Description:    jsii.String("Starts " + StateMachineName + " once per order (execution named after the order)"),
		Timeout:        core.Duration(StarterTimeout),
		MemorySize:     128,
		Environment: map[string]*string{
			lambdaapi.EnvEnvironment:       jsii.String(props.Environment()),
			lambdaapi.EnvStateMachineARN:   smArn,
			lambdaapi.EnvIdempotencyWindow: jsii.String(lambdaapi.FormatWindow(eventsapi.StarterWindow)),
		},
		Dependencies: []golambda.Dependency{
			{Name: "states:StartExecution", AttemptsEnv: []string{lambdaapi.EnvSDKMaxAttempts}},
			{Name: "sqs:dlq", AttemptsEnv: []string{lambdaapi.EnvSDKMaxAttempts}},
		},
	})
	if props.Workflow != nil {
		props.Workflow.StateMachine.GrantStartExecution(s.Function.Function)
	}
	core.Accepts(s.Function.Function, eventsapi.TypePedidoCreado, eventsapi.AcceptedVersions(eventsapi.TypePedidoCreado))
	s.checkReplays(props, v)
	mc := cmp.Or(props.MaximumConcurrency, queues.MinMaximumConcurrency)
	s.Buffer.AddConsumer(s.Function.Function, queues.ConsumerOptions{
		MaximumConcurrency: mc,
		BatchSize:          10,
	})
	// A failed start comes back after a jitter of it (lambdas/sqsbatch).
	s.Function.Function.AddEnvironment(jsii.String(lambdaapi.EnvVisibilityTimeout), jsii.String(fmt.Sprintf("%.0fs", s.Buffer.VisibilityTimeoutSeconds())), nil)
	return s
}

// checkReplays fails synthesis unless the starter's window covers the
// longest pass of an archived event: replayed when the archive is about to
// drop it, delivered by the rule within its maximum event age, then at most
// the buffer's DLQ retention and one redrive.
func (s *Starter) checkReplays(props *StarterProps, v *core.Problems) {
	var days float64
	if props.ArchiveRetention != nil {
		secs, err := core.Seconds(props.ArchiveRetention)
		if v.If(err != nil, "ArchiveRetention: %v", err) {
			return
		}
		days = secs / 86400
	}
	if v.If(days < 1 || days != math.Trunc(days), "ArchiveRetention must be a whole number of days, at least 1 (got %v; 0 would keep events forever, and a replay of an event older than %.0f days would start a second execution)",
		days, eventsapi.ExecutionNameRetention.Hours()/24) {
		return
	}
	ruleAge, err := core.Seconds(s.Rule.MaxEventAge)
	if v.If(err != nil, "%v", err) {
		return
	}
	upstream := time.Duration(days)*24*time.Hour + time.Duration(ruleAge)*time.Second
	s.LongestPass = s.Buffer.LongestPass(upstream, 0)
	if err := s.LongestPass.Covers(eventsapi.StarterWindow); err != nil {
		v.Addf("an archive of %v days: %v", days, err)
	}
}
