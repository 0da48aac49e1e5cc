package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awspipes"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	sfn "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	tasks "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctionstasks"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/synthesized"
)

// checkCasesDir holds the checks' cases as synthesized: small apps that
// pass or break a rule, each in stacks of an environment of its own (the
// stack name's suffix), which the tests of package checks read without
// jsii. TestCheckCasesAreCurrent synthesizes them again and fails when the
// committed files differ; MF_UPDATE_CHECK_CASES=1 writes them.
const checkCasesDir = "checks/testdata/cases"

// checkCase builds one case in the stacks c makes.
type checkCase struct {
	app  awscdk.App
	name string
	// stack is "Checks-<name>", with a data key and an alerts topic.
	stack awscdk.Stack
	key   awskms.Key
	alert awssns.Topic
}

// platform makes c's stack with its key and alerts topic.
func (c *checkCase) platform() {
	c.stack = c.newStack("Checks")
	c.key = awskms.NewKey(c.stack, jsii.String("DataKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	c.alert = awssns.NewTopic(c.stack, jsii.String("Alerts"), &awssns.TopicProps{MasterKey: c.key, EnforceSSL: jsii.Bool(true)})
}

func (c *checkCase) newStack(part string) awscdk.Stack {
	return cdktest.NewStackIn(c.app, part+"-"+c.name)
}

func (c *checkCase) fn(id string, timeout float64) awslambda.Function {
	return c.fnIn(c.stack, id, timeout, nil)
}

func (c *checkCase) fnIn(stack awscdk.Stack, id string, timeout float64, env map[string]*string) awslambda.Function {
	props := &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
	}
	if timeout > 0 {
		props.Timeout = awscdk.Duration_Seconds(jsii.Number(timeout))
	}
	if env != nil {
		props.FunctionName, props.Environment = jsii.String(strings.ToLower(id)), &env
	}
	return awslambda.NewFunction(stack, jsii.String(id), props)
}

// queueWithDLQ is a plain L2 queue with a DLQ and the DLQ alarm (compliant).
func (c *checkCase) queueWithDLQ(id string, visibility float64) awssqs.Queue {
	dlq := awssqs.NewQueue(c.stack, jsii.String(id+"Dlq"), &awssqs.QueueProps{RetentionPeriod: awscdk.Duration_Days(jsii.Number(14))})
	queues.NewDeadLetterAlarm(c.stack, id+"DlqAlarm", dlq, c.alert, "test")
	return awssqs.NewQueue(c.stack, jsii.String(id), &awssqs.QueueProps{
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(visibility)),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(4)},
	})
}

func sqsSource(q awssqs.IQueue, partial bool, ceiling float64) awslambdaeventsources.SqsEventSource {
	props := &awslambdaeventsources.SqsEventSourceProps{}
	if partial {
		props.ReportBatchItemFailures = jsii.Bool(true)
	}
	if ceiling > 0 {
		props.MaxConcurrency = jsii.Number(ceiling)
	}
	return awslambdaeventsources.NewSqsEventSource(q, props)
}

// checkCases are the cases, by name (an environment name: letters only).
var checkCases = map[string]func(c *checkCase){
	"Compliant": func(c *checkCase) {
		ctx := core.Context{DataKey: c.key, Alerts: c.alert}
		q := queues.NewQueue(c.stack, "Pedidos", &queues.QueueProps{QueueName: jsii.String("cola-mercadofresco-pedidos"), Context: ctx, VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(400))})
		q.AddConsumer(c.fn("Cobro", 66), queues.ConsumerOptions{MaximumConcurrency: 20})
		stock := queues.NewQueue(c.stack, "Stock", &queues.QueueProps{Fifo: true, Context: ctx})
		stock.AddConsumer(c.fn("StockFn", 10), queues.ConsumerOptions{MaximumConcurrency: 10})
		// Plain L2 resources that follow the rules pass too.
		c.fn("PlainFn", 10).AddEventSource(sqsSource(c.queueWithDLQ("Plain", 60), true, 2))
	},
	"QueueWithoutDLQ": func(c *checkCase) {
		awssqs.NewQueue(c.stack, jsii.String("Lonely"), &awssqs.QueueProps{QueueName: jsii.String("cola-sola")})
	},
	"QueueWithDLQ": func(c *checkCase) { c.queueWithDLQ("Ok", 30) },
	"SubscriptionDLQ": func(c *checkCase) {
		subDlq := awssqs.NewQueue(c.stack, jsii.String("SubDlq"), nil)
		awssns.NewTopic(c.stack, jsii.String("Topic"), nil).AddSubscription(awssnssubscriptions.NewSqsSubscription(c.queueWithDLQ("Target", 30), &awssnssubscriptions.SqsSubscriptionProps{DeadLetterQueue: subDlq}))
	},
	"DLQNoAlarm": func(c *checkCase) { c.dlqWithAlarm(func(awssqs.Queue) {}) },
	"DLQSilentAlarm": func(c *checkCase) {
		c.dlqWithAlarm(func(dlq awssqs.Queue) {
			dlq.MetricApproximateNumberOfMessagesVisible(nil).CreateAlarm(c.stack, jsii.String("Silent"), &awscloudwatch.CreateAlarmOptions{
				Threshold: jsii.Number(0), EvaluationPeriods: jsii.Number(1), ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			})
		})
	},
	"DLQLateAlarm": func(c *checkCase) {
		c.dlqWithAlarm(func(dlq awssqs.Queue) {
			queues.NewDeadLetterAlarm(c.stack, "Ok", awssqs.NewQueue(c.stack, jsii.String("Other"), nil), c.alert, "x") // alarm on another queue
			dlq.MetricApproximateNumberOfMessagesVisible(nil).CreateAlarm(c.stack, jsii.String("Late"), &awscloudwatch.CreateAlarmOptions{Threshold: jsii.Number(100), EvaluationPeriods: jsii.Number(1)})
		})
	},
	// The double charge on plain L2 resources: visibility 120 s vs timeout 180 s.
	"VisibilityShort": func(c *checkCase) {
		c.fn("Cobro", 180).AddEventSource(sqsSource(c.queueWithDLQ("Pedidos", 120), true, 20))
	},
	// The fix: 400 s with a 66 s consumer.
	"VisibilityFixed": func(c *checkCase) {
		c.fn("Cobro", 66).AddEventSource(sqsSource(c.queueWithDLQ("Pedidos", 400), true, 20))
	},
	"VisibilityAlias": func(c *checkCase) {
		alias := awslambda.NewAlias(c.stack, jsii.String("Live"), &awslambda.AliasProps{AliasName: jsii.String("live"), Version: c.fn("Fn", 15).CurrentVersion()})
		alias.AddEventSource(awslambdaeventsources.NewSqsEventSource(c.queueWithDLQ("Q", 100), &awslambdaeventsources.SqsEventSourceProps{
			ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(2), BatchSize: jsii.Number(100), MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(20)),
		}))
	},
	// L1 resources referring to each other by literal names and ARNs, with
	// CloudFormation's defaults (visibility 30 s, timeout 3 s -> 18 s: fine;
	// timeout 10 s -> 60 s: not fine).
	"VisibilityLiteralArns": func(c *checkCase) {
		dlq := awssqs.NewCfnQueue(c.stack, jsii.String("L1Dlq"), &awssqs.CfnQueueProps{QueueName: jsii.String("l1-dlq"), MessageRetentionPeriod: jsii.Number(1209600)})
		queues.NewDeadLetterAlarm(c.stack, "L1DlqAlarm", awssqs.Queue_FromQueueAttributes(c.stack, jsii.String("L1DlqRef"), &awssqs.QueueAttributes{QueueArn: dlq.AttrArn(), QueueName: dlq.AttrQueueName()}), c.alert, "x")
		awssqs.NewCfnQueue(c.stack, jsii.String("L1Src"), &awssqs.CfnQueueProps{QueueName: jsii.String("l1-src"),
			RedrivePolicy: map[string]any{"deadLetterTargetArn": "arn:aws:sqs:eu-west-1:111111111111:l1-dlq", "maxReceiveCount": 4}})
		awslambda.NewCfnFunction(c.stack, jsii.String("L1Fn"), &awslambda.CfnFunctionProps{
			FunctionName: jsii.String("l1-fn"), Role: jsii.String("arn:aws:iam::111111111111:role/r"), Timeout: jsii.Number(10),
			Code: &awslambda.CfnFunction_CodeProperty{ZipFile: jsii.String("x")}, Runtime: jsii.String("nodejs22.x"), Handler: jsii.String("index.h"),
		})
		awslambda.NewCfnEventSourceMapping(c.stack, jsii.String("L1Esm"), &awslambda.CfnEventSourceMappingProps{
			EventSourceArn: jsii.String("arn:aws:sqs:eu-west-1:111111111111:l1-src"), FunctionName: jsii.String("l1-fn"),
			FunctionResponseTypes: jsii.Strings("ReportBatchItemFailures"),
			ScalingConfig:         &awslambda.CfnEventSourceMapping_ScalingConfigProperty{MaximumConcurrency: jsii.Number(2)},
		})
	},
	"SNSLambda": func(c *checkCase) {
		topic := awssns.NewTopic(c.stack, jsii.String("Confirmado"), &awssns.TopicProps{TopicName: jsii.String("mercadofresco-pedido-confirmado")})
		topic.AddSubscription(awssnssubscriptions.NewLambdaSubscription(c.fn("Correo", 10), nil))
	},
	"SNSInlineLambda": func(c *checkCase) {
		awssns.NewCfnTopic(c.stack, jsii.String("Inline"), &awssns.CfnTopicProps{Subscription: &[]any{
			&awssns.CfnTopic_SubscriptionProperty{Protocol: jsii.String("lambda"), Endpoint: jsii.String("arn:aws:lambda:eu-west-1:111111111111:function:x")},
		}})
	},
	"FifoStandardDLQ": func(c *checkCase) {
		dlq := awssqs.NewCfnQueue(c.stack, jsii.String("StdDlq"), &awssqs.CfnQueueProps{QueueName: jsii.String("std-dlq")})
		queues.NewDeadLetterAlarm(c.stack, "StdDlqAlarm", awssqs.Queue_FromQueueAttributes(c.stack, jsii.String("StdDlqRef"), &awssqs.QueueAttributes{QueueArn: dlq.AttrArn(), QueueName: dlq.AttrQueueName()}), c.alert, "x")
		awssqs.NewCfnQueue(c.stack, jsii.String("Fifo"), &awssqs.CfnQueueProps{FifoQueue: jsii.Bool(true), RedrivePolicy: map[string]any{"deadLetterTargetArn": dlq.AttrArn(), "maxReceiveCount": 4}})
	},
	"DLQRetention": func(c *checkCase) {
		dlq := awssqs.NewQueue(c.stack, jsii.String("Dlq"), nil) // 4 days, as the source
		queues.NewDeadLetterAlarm(c.stack, "DlqAlarm", dlq, c.alert, "x")
		awssqs.NewQueue(c.stack, jsii.String("Src"), &awssqs.QueueProps{DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(4)}})
	},
	"MappingNeither":        func(c *checkCase) { c.fn("Fn", 10).AddEventSource(sqsSource(c.queueWithDLQ("Q", 60), false, 0)) },
	"MappingNoCeiling":      func(c *checkCase) { c.fn("Fn", 10).AddEventSource(sqsSource(c.queueWithDLQ("Q", 60), true, 0)) },
	"MappingNoPartialBatch": func(c *checkCase) { c.fn("Fn", 10).AddEventSource(sqsSource(c.queueWithDLQ("Q", 60), false, 5)) },
	"Acknowledged": func(c *checkCase) {
		core.Acknowledge(awssqs.NewQueue(c.stack, jsii.String("Scratch"), nil), checks.RuleQueueWithoutDLQ, "test scratch queue: messages are disposable")
	},
	"ReservedFive": func(c *checkCase) { c.reserved(5) },
	"ReservedTen":  func(c *checkCase) { c.reserved(10) },
	// Six functions over their reserved concurrency: six findings, in the
	// same order every time.
	"ReservedOrder": func(c *checkCase) {
		for _, name := range []string{"Fa", "Fb", "Fc", "Fd", "Fe", "Ff"} {
			fn := awslambda.NewFunction(c.stack, jsii.String(name), &awslambda.FunctionProps{
				Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"), Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
				Timeout: awscdk.Duration_Seconds(jsii.Number(5)), ReservedConcurrentExecutions: jsii.Number(2),
			})
			fn.AddEventSource(sqsSource(c.queueWithDLQ(name+"Q", 60), true, 5))
		}
	},
	"SetBy": func(c *checkCase) {
		q := c.queueWithDLQ("Pedidos", 120)
		core.SetBy(q, "VisibilityTimeout", "PedidosVisibility in constructs/example")
		fn := c.fn("Cobro", 180)
		core.SetBy(fn, "Timeout", "CobroTimeout in constructs/example")
		fn.AddEventSource(sqsSource(q, true, 20))
	},
	// The 80-call layering: SDK 5 x receives 4 x workflow 4.
	"AttemptsEighty": func(c *checkCase) { c.stormLayers("5", 4, 3) },
	// The fix (SDK 2, the queue a safety net, the workflow commands): 2 x 4 x 1.
	"AttemptsEight": func(c *checkCase) { c.stormLayers("2", 4, 0) },
	"RuleNoRetryPolicy": func(c *checkCase) {
		bus := awsevents.NewEventBus(c.stack, jsii.String("Bus"), nil)
		q := c.queueWithDLQ("Destino", 30)
		awsevents.NewRule(c.stack, jsii.String("Regla"), &awsevents.RuleProps{EventBus: bus, EventPattern: &awsevents.EventPattern{Source: jsii.Strings("x")}}).AddTarget(awseventstargets.NewSqsQueue(q, nil))
		awsevents.NewRule(c.stack, jsii.String("Buena"), &awsevents.RuleProps{EventBus: bus, EventPattern: &awsevents.EventPattern{Source: jsii.Strings("y")}}).
			AddTarget(awseventstargets.NewSqsQueue(q, &awseventstargets.SqsQueueProps{RetryAttempts: jsii.Number(10)}))
	},
	// A dependency counted per work item, and an acknowledged one.
	"PerWorkItem": func(c *checkCase) {
		fn := c.fnIn(c.stack, "Publicador", 0, map[string]*string{"AWS_MAX_ATTEMPTS": jsii.String("2"), "OUTBOX_MAX_CLAIMS": jsii.String("3")})
		fn.Node().DefaultChild().(awscdk.CfnResource).AddMetadata(jsii.String(synthesized.MetadataDependencies), []any{
			map[string]any{"name": "events", "attemptsEnv": []any{"AWS_MAX_ATTEMPTS", "OUTBOX_MAX_CLAIMS"}, "perWorkItem": true},
		})
		awsevents.NewRule(c.stack, jsii.String("Cada"), &awsevents.RuleProps{
			Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
			Targets:  &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{RetryAttempts: jsii.Number(0)})},
		})
		noisy := c.fnIn(c.stack, "Ruidosa", 0, map[string]*string{"ERP_MAX_ATTEMPTS": jsii.String("20")})
		core.Acknowledge(noisy, checks.RuleAttempts, "test: the ERP de-duplicates and rate-limits itself")
	},
	"Unreadable": func(c *checkCase) { c.unreadableStateMachine("Opaca") },
	"UnreadableAcknowledged": func(c *checkCase) {
		core.Acknowledge(c.unreadableStateMachine("Reconocida"), checks.RuleAttempts, "test: the retries of this definition are reviewed by hand and bounded at 3")
	},
	// A definition built with Fn::Sub and a variable map is read.
	"SubVariableMap": func(c *checkCase) {
		role := awsiam.NewRole(c.stack, jsii.String("SubRole"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil)})
		def := awscdk.Fn_Sub(jsii.String(`{"StartAt":"Cobrar","States":{"Cobrar":{"Type":"Task","Resource":"${Fn}","Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":99}],"End":true}}}`),
			&map[string]*string{"Fn": c.fn("SubFn", 10).FunctionArn()})
		sfn.NewCfnStateMachine(c.stack, jsii.String("Sub"), &sfn.CfnStateMachineProps{RoleArn: role.RoleArn(), DefinitionString: def})
	},
}

func (c *checkCase) dlqWithAlarm(alarm func(dlq awssqs.Queue)) {
	dlq := awssqs.NewQueue(c.stack, jsii.String("Dlq"), &awssqs.QueueProps{QueueName: jsii.String("fallidos"), RetentionPeriod: awscdk.Duration_Days(jsii.Number(14))})
	awssqs.NewQueue(c.stack, jsii.String("Src"), &awssqs.QueueProps{DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(4)}})
	alarm(dlq)
}

// reserved: two mappings of ceiling 5 on a function whose reserved
// concurrency is n.
func (c *checkCase) reserved(n float64) {
	fn := awslambda.NewFunction(c.stack, jsii.String("Fn"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"), Code: awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
		Timeout: awscdk.Duration_Seconds(jsii.Number(5)), ReservedConcurrentExecutions: jsii.Number(n),
	})
	for _, id := range []string{"A", "B"} {
		fn.AddEventSource(sqsSource(c.queueWithDLQ(id, 60), true, 5))
	}
}

// stormLayers: an SQS queue with maxReceiveCount receives, consumed by a
// pipe that runs an express workflow synchronously (its failure returns
// the message to the queue), whose Task retries the charge function
// retries times, which calls the gateway with the SDK's sdk attempts.
func (c *checkCase) stormLayers(sdk string, receives, retries float64) {
	fn := c.fnIn(c.stack, "Cobro", 0, map[string]*string{"AWS_MAX_ATTEMPTS": jsii.String(sdk), "GATEWAY_MAX_ATTEMPTS": jsii.String(sdk)})
	dlq := awssqs.NewQueue(c.stack, jsii.String("PedidosDlq"), &awssqs.QueueProps{RetentionPeriod: awscdk.Duration_Days(jsii.Number(14))})
	q := awssqs.NewQueue(c.stack, jsii.String("Pedidos"), &awssqs.QueueProps{QueueName: jsii.String("cola-mercadofresco-pedidos"),
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(receives)}})
	charge := tasks.NewLambdaInvoke(c.stack, jsii.String("Cobrar"), &tasks.LambdaInvokeProps{LambdaFunction: fn, PayloadResponseOnly: jsii.Bool(true), RetryOnServiceExceptions: jsii.Bool(false)})
	charge.AddRetry(&sfn.RetryProps{Errors: jsii.Strings("States.ALL"), MaxAttempts: jsii.Number(retries)})
	sm := sfn.NewStateMachine(c.stack, jsii.String("Flujo"), &sfn.StateMachineProps{StateMachineName: jsii.String("flujo-pedido"), StateMachineType: sfn.StateMachineType_EXPRESS,
		DefinitionBody: sfn.DefinitionBody_FromChainable(charge)})
	role := awsiam.NewRole(c.stack, jsii.String("PipeRole"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("pipes.amazonaws.com"), nil)})
	awspipes.NewCfnPipe(c.stack, jsii.String("Pipe"), &awspipes.CfnPipeProps{Name: jsii.String("pipe-pedidos"), RoleArn: role.RoleArn(), Source: q.QueueArn(), Target: sm.StateMachineArn(),
		TargetParameters: &awspipes.CfnPipe_PipeTargetParametersProperty{
			StepFunctionStateMachineParameters: &awspipes.CfnPipe_PipeTargetStateMachineParametersProperty{InvocationType: jsii.String("REQUEST_RESPONSE")},
		}})
}

// unreadableStateMachine is a valid CloudFormation state machine whose
// definition the attempts rule cannot render (an Fn::If on a condition
// only CloudFormation evaluates).
func (c *checkCase) unreadableStateMachine(id string) sfn.CfnStateMachine {
	role := awsiam.NewRole(c.stack, jsii.String(id+"Role"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil)})
	body := awscdk.Fn_Sub(jsii.String(`{"StartAt":"Cobrar","States":{"Cobrar":{"Type":"Task","Resource":"${Fn}","Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":99}],"End":true}}}`),
		&map[string]*string{"Fn": c.fn(id+"Fn", 10).FunctionArn()})
	cond := awscdk.NewCfnCondition(c.stack, jsii.String(id+"Cond"), &awscdk.CfnConditionProps{Expression: awscdk.Fn_ConditionEquals(awscdk.Aws_REGION(), jsii.String("eu-west-1"))})
	def := awscdk.Token_AsString(awscdk.Fn_ConditionIf(cond.LogicalId(), body, body), nil)
	return sfn.NewCfnStateMachine(c.stack, jsii.String(id), &sfn.CfnStateMachineProps{RoleArn: role.RoleArn(), DefinitionString: def})
}

// routeCase is a contract case: a consumer stack with a bus and a topic,
// and a producer stack (the consumer's when one stack is enough).
type routeCase struct {
	*checkCase
	producer, consumer awscdk.Stack
	bus                awsevents.EventBus
	topic              awssns.Topic
}

func newRouteCase(c *checkCase, split bool) *routeCase {
	r := &routeCase{checkCase: c, consumer: c.newStack("Consumers")}
	r.producer = r.consumer
	if split {
		r.producer = c.newStack("Producers")
	}
	r.bus = awsevents.NewEventBus(r.consumer, jsii.String("Bus"), nil)
	r.topic = awssns.NewTopic(r.consumer, jsii.String("Topic"), nil)
	return r
}

// consumerOn is a function draining a new queue, accepting typ in versions.
func (r *routeCase) consumerOn(id, typ string, versions ...int) awssqs.Queue {
	q := awssqs.NewQueue(r.consumer, jsii.String(id+"Queue"), nil)
	fn := r.fnIn(r.consumer, id, 0, nil)
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, nil))
	if len(versions) > 0 {
		core.Accepts(fn, typ, versions)
	}
	return q
}

func (r *routeCase) producerFn(id string) awslambda.Function { return r.fnIn(r.producer, id, 0, nil) }

func (r *routeCase) rule(id string, pattern *awsevents.EventPattern, targets ...awsevents.IRuleTarget) awsevents.Rule {
	rule := awsevents.NewRule(r.consumer, jsii.String(id), &awsevents.RuleProps{EventBus: r.bus, EventPattern: pattern})
	for _, t := range targets {
		rule.AddTarget(t)
	}
	return rule
}

func pedidoPattern() *awsevents.EventPattern {
	return &awsevents.EventPattern{Source: jsii.Strings(eventsapi.SourceTienda), DetailType: jsii.Strings(eventsapi.TypePedidoCreado)}
}

// routeCases are the contract cases: stacks of their own, no platform.
var routeCases = map[string]func(c *checkCase){}

func init() {
	const creado, confirmado = eventsapi.TypePedidoCreado, eventsapi.TypePedidoConfirmado
	routes := map[string]func(r *routeCase){
		"ContractBusV2ToV1": func(r *routeCase) {
			r.rule("PedidoRule", pedidoPattern(), awseventstargets.NewSqsQueue(r.consumerOn("Starter", creado, 1), nil))
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{2}, r.bus)
		},
		"ContractBusV2Accepted": func(r *routeCase) {
			r.rule("PedidoRule", pedidoPattern(), awseventstargets.NewSqsQueue(r.consumerOn("Starter", creado, 1, 2), nil))
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1, 2}, r.bus)
		},
		"ContractBusVersionPattern": func(r *routeCase) {
			p := pedidoPattern()
			p.Detail = &map[string]any{"version": []any{1}}
			r.rule("PedidoRule", p, awseventstargets.NewSqsQueue(r.consumerOn("Starter", creado, 1), nil))
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1, 2}, r.bus)
		},
		// The same rule, its dropping of version 2 acknowledged.
		"ContractVersionFilterAcknowledged": func(r *routeCase) {
			p := pedidoPattern()
			p.Detail = &map[string]any{"version": []any{1}}
			rule := r.rule("PedidoRule", p, awseventstargets.NewSqsQueue(r.consumerOn("Starter", creado, 1), nil))
			core.Acknowledge(rule, checks.RuleContract, "version 2 goes to the new starter through its own rule")
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1, 2}, r.bus)
		},
		"ContractMappingFilter": func(r *routeCase) {
			q := awssqs.NewQueue(r.consumer, jsii.String("StarterQueue"), nil)
			fn := r.fnIn(r.consumer, "Starter", 0, nil)
			fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, &awslambdaeventsources.SqsEventSourceProps{
				Filters: &[]*map[string]any{awslambda.FilterCriteria_Filter(&map[string]any{"body": map[string]any{"detail": map[string]any{"version": []any{1}}}})},
			}))
			core.Accepts(fn, creado, []int{1, 2})
			r.rule("PedidoRule", pedidoPattern(), awseventstargets.NewSqsQueue(q, nil))
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1, 2}, r.bus)
		},
		// A condition MF-CONTRACT cannot evaluate (numeric) is a finding,
		// not a guess.
		"ContractUnsupportedPattern": func(r *routeCase) {
			p := pedidoPattern()
			p.Detail = &map[string]any{"version": []any{map[string]any{"numeric": []any{">=", 1}}}}
			r.rule("PedidoRule", p, awseventstargets.NewSqsQueue(r.consumerOn("Starter", creado, 1), nil))
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1}, r.bus)
		},
		"ContractBusOtherType": func(r *routeCase) {
			r.rule("CartRule", &awsevents.EventPattern{DetailType: jsii.Strings(eventsapi.TypeCarritoAbandonado)}, awseventstargets.NewSqsQueue(r.consumerOn("Carts", eventsapi.TypeCarritoAbandonado, 1), nil))
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{2}, r.bus)
		},
		"ContractTopicNoFilter": func(r *routeCase) {
			r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(r.consumerOn("Prep", confirmado, 1), &awssnssubscriptions.SqsSubscriptionProps{RawMessageDelivery: jsii.Bool(true)}))
			core.Produces(r.producerFn("Workflow"), confirmado, []int{2}, r.topic)
		},
		"ContractTopicFilter": func(r *routeCase) {
			r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(r.consumerOn("Prep", confirmado, 1), &awssnssubscriptions.SqsSubscriptionProps{
				RawMessageDelivery: jsii.Bool(true),
				FilterPolicy:       &map[string]awssns.SubscriptionFilter{eventsapi.AttrVersion: awssns.SubscriptionFilter_StringFilter(&awssns.StringConditions{Allowlist: jsii.Strings("1")})},
			}))
			core.Produces(r.producerFn("Workflow"), confirmado, []int{1, 2}, r.topic)
		},
		"ContractTransformerV2": func(r *routeCase) {
			rule := r.rule("ERPRule", pedidoPattern(), awseventstargets.NewSqsQueue(r.consumerOn("ERP", "AvisoPedidoERP", 1), &awseventstargets.SqsQueueProps{
				Message: awsevents.RuleTargetInput_FromObject(map[string]any{"version": 2, "pedido_id": awsevents.EventField_FromPath(jsii.String("$.detail.pedido_id"))}),
			}))
			core.Accepts(rule, creado, []int{1})
			core.Produces(rule, "AvisoPedidoERP", []int{2}, nil)
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1}, r.bus)
		},
		"ContractTransformerUndeclared": func(r *routeCase) {
			rule := r.rule("ERPRule", pedidoPattern(), awseventstargets.NewSqsQueue(r.consumerOn("ERP", "AvisoPedidoERP", 1), &awseventstargets.SqsQueueProps{
				Message: awsevents.RuleTargetInput_FromObject(map[string]any{"pedido_id": awsevents.EventField_FromPath(jsii.String("$.detail.pedido_id"))}),
			}))
			core.Accepts(rule, creado, []int{1})
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1}, r.bus)
		},
		"ContractConsumerUndeclared": func(r *routeCase) {
			r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(r.consumerOn("Prep", confirmado), nil))
			core.Produces(r.producerFn("Workflow"), confirmado, []int{1}, r.topic)
		},
		// An API destination's L1 is not its default child: its
		// declaration still reaches the template.
		"ContractApiDestination": func(r *routeCase) {
			conn := awsevents.NewConnection(r.consumer, jsii.String("Conn"), &awsevents.ConnectionProps{
				Authorization: awsevents.Authorization_ApiKey(jsii.String("x-api-key"), awscdk.SecretValue_UnsafePlainText(jsii.String("k"))),
			})
			dest := awsevents.NewApiDestination(r.consumer, jsii.String("Dest"), &awsevents.ApiDestinationProps{Connection: conn, Endpoint: jsii.String("https://erp.example.com")})
			core.Accepts(dest, "AvisoPedidoERP", []int{1})
			rule := r.rule("ERPRule", pedidoPattern(), awseventstargets.NewApiDestination(dest, &awseventstargets.ApiDestinationProps{
				Event: awsevents.RuleTargetInput_FromObject(map[string]any{"version": awsevents.EventField_FromPath(jsii.String("$.detail.version"))}),
			}))
			core.Accepts(rule, creado, []int{1, 2})
			core.Produces(rule, "AvisoPedidoERP", nil, nil) // copies the version
			core.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{2}, r.bus)
		},
	}
	for name, build := range routes {
		routeCases[name] = func(c *checkCase) { build(newRouteCase(c, false)) }
	}
	// Deploy order: a producer whose stack does not depend on its
	// consumer's; the same with the dependency declared; and a stack that
	// references the consumer's resources (the reference becomes an
	// export, and a dependency).
	order := func(c *checkCase, how string) {
		r := newRouteCase(c, true)
		r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(r.consumerOn("Prep", confirmado, 1), nil))
		fn := r.producerFn("Workflow")
		switch how {
		case "declared":
			r.producer.AddStackDependency(r.consumer, jsii.String("consumers first"))
		case "referenced":
			r.topic.GrantPublish(fn)
		}
		core.Produces(fn, confirmado, []int{1}, r.topic)
	}
	routeCases["ContractOrderMissing"] = func(c *checkCase) { order(c, "") }
	routeCases["ContractOrderDeclared"] = func(c *checkCase) { order(c, "declared") }
	routeCases["ContractOrderReferenced"] = func(c *checkCase) { order(c, "referenced") }
}

// TestCheckCasesAreCurrent synthesizes every case into one assembly and
// compares the parts the checks read with checks/testdata/cases.
func TestCheckCasesAreCurrent(t *testing.T) {
	out := t.TempDir()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(out), Context: &map[string]any{"aws:cdk:enable-path-metadata": true, "@aws-cdk/core:defaultCrossStackReferences": "strong"}})
	for _, name := range slices.Sorted(maps.Keys(checkCases)) {
		c := &checkCase{app: app, name: name}
		c.platform()
		checkCases[name](c)
	}
	for _, name := range slices.Sorted(maps.Keys(routeCases)) {
		routeCases[name](&checkCase{app: app, name: name})
	}
	// The cases are valid apps: only the checks judge them.
	for _, st := range *app.Synth(nil).Stacks() {
		for _, msg := range *st.Messages() {
			if msg.Level == cxapi.SynthesisMessageLevel_ERROR || msg.Level == cxapi.SynthesisMessageLevel_WARNING {
				t.Errorf("%s: %s %s: %v", *st.StackName(), msg.Level, *msg.Id, msg.Entry.Data)
			}
		}
	}
	files, err := prunedAssembly(out)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.FromSlash(checkCasesDir)
	if os.Getenv("MF_UPDATE_CHECK_CASES") != "" {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, raw := range files {
			if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	committed, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range committed {
		if _, ok := files[filepath.Base(f)]; !ok {
			t.Errorf("%s is not a case any more: run MF_UPDATE_CHECK_CASES=1 go test -run TestCheckCasesAreCurrent .", f)
		}
	}
	for name, raw := range files {
		old, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(old, raw) {
			t.Errorf("%s/%s differs from the cases as synthesized: run MF_UPDATE_CHECK_CASES=1 go test -run TestCheckCasesAreCurrent . and review the diff", checkCasesDir, name)
		}
	}
}

// prunedAssembly is the assembly in out reduced to what the checks read:
// the manifest's stacks (environment, template, stack dependencies,
// metadata file), the templates without the bootstrap parameter and rule
// and the policies nothing references (IAM, queue and topic policies),
// each resource's metadata reduced to its construct path and the project's
// keys, and the project's construct metadata.
func prunedAssembly(out string) (map[string][]byte, error) {
	var m struct {
		Artifacts map[string]map[string]any `json:"artifacts"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	write := func(name string, v any) {
		b, _ := json.MarshalIndent(v, "", " ")
		files[name] = append(b, '\n')
	}
	keep := func(md map[string]any) map[string]any {
		kept := map[string]any{}
		for k, v := range md {
			if k == "aws:cdk:path" || strings.HasPrefix(k, "mercadofresco:") {
				kept[k] = v
			}
		}
		return kept
	}
	artifacts := map[string]any{}
	for id, a := range m.Artifacts {
		if a["type"] != "aws:cloudformation:stack" {
			continue
		}
		props, _ := a["properties"].(map[string]any)
		tplFile, _ := props["templateFile"].(string)
		stack := map[string]any{"type": a["type"], "environment": a["environment"], "properties": map[string]any{"templateFile": tplFile}}
		var deps []any
		deps0, _ := a["dependencies"].([]any)
		for _, d := range deps0 {
			if m.Artifacts[d.(string)]["type"] == "aws:cloudformation:stack" {
				deps = append(deps, d)
			}
		}
		if len(deps) > 0 {
			stack["dependencies"] = deps
		}
		var tpl map[string]any
		if raw, err = os.ReadFile(filepath.Join(out, tplFile)); err == nil {
			err = json.Unmarshal(raw, &tpl)
		}
		if err != nil {
			return nil, err
		}
		delete(tpl, "Parameters")
		delete(tpl, "Rules")
		res, _ := tpl["Resources"].(map[string]any)
		for id, r := range res {
			r := r.(map[string]any)
			switch r["Type"] {
			case "AWS::IAM::Policy", "AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy":
				delete(res, id)
				continue
			}
			if md, ok := r["Metadata"].(map[string]any); ok {
				r["Metadata"] = keep(md)
			}
		}
		write(tplFile, tpl)
		if mf, _ := a["additionalMetadataFile"].(string); mf != "" {
			var meta map[string][]map[string]any
			if raw, err = os.ReadFile(filepath.Join(out, mf)); err == nil {
				err = json.Unmarshal(raw, &meta)
			}
			if err != nil {
				return nil, err
			}
			kept := map[string]any{}
			for path, entries := range meta {
				var es []any
				for _, e := range entries {
					if typ, _ := e["type"].(string); strings.HasPrefix(typ, "mercadofresco:") {
						es = append(es, e)
					}
				}
				if len(es) > 0 {
					kept[path] = es
				}
			}
			if len(kept) > 0 {
				stack["additionalMetadataFile"] = mf
				write(mf, kept)
			}
		}
		artifacts[id] = stack
	}
	write("manifest.json", map[string]any{"artifacts": artifacts})
	return files, nil
}
