package guardrails_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/guardrails"
	"github.com/mercadofresco/integration/constructs/reliablequeue"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

type fixture struct {
	app    awscdk.App
	stack  awscdk.Stack
	alerts awssns.Topic
	key    awskms.Key
}

func newFixture() *fixture {
	p := cdktest.NewPlatform("Checks")
	guardrails.Apply(p.App)
	return &fixture{app: p.App, stack: p.Stack, alerts: p.Alerts, key: p.Key}
}

func (f *fixture) fn(id string, timeout float64) awslambda.Function {
	return awslambda.NewFunction(f.stack, jsii.String(id), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
		Timeout: awscdk.Duration_Seconds(jsii.Number(timeout)),
	})
}

// queueWithDLQ is a plain L2 queue with a DLQ and the DLQ alarm (compliant).
func (f *fixture) queueWithDLQ(id string, visibility float64) awssqs.Queue {
	dlq := awssqs.NewQueue(f.stack, jsii.String(id+"Dlq"), &awssqs.QueueProps{RetentionPeriod: awscdk.Duration_Days(jsii.Number(14))})
	reliablequeue.NewDeadLetterAlarm(f.stack, id+"DlqAlarm", dlq, f.alerts, "test")
	return awssqs.NewQueue(f.stack, jsii.String(id), &awssqs.QueueProps{
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(visibility)),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(4)},
	})
}

func (f *fixture) messages(level string) []string {
	if level == "error" {
		return cdktest.Errors(f.stack)
	}
	return cdktest.Warnings(f.stack)
}

func (f *fixture) errorsFor(rule string) []string {
	var out []string
	for _, e := range f.messages("error") {
		if strings.HasPrefix(e, "["+rule+"]") {
			out = append(out, e)
		}
	}
	return out
}

func requireContains(t *testing.T, msgs []string, parts ...string) {
	t.Helper()
	cdktest.RequireContains(t, msgs, parts...)
}

func TestCompliantSetupPasses(t *testing.T) {
	f := newFixture()
	q := reliablequeue.New(f.stack, "Pedidos", &reliablequeue.Props{
		QueueName: jsii.String("cola-mercadofresco-pedidos"), Context: core.Context{DataKey: f.key, Alerts: f.alerts},
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(400)),
	})
	q.AddConsumer(f.fn("Cobro", 66), reliablequeue.ConsumerOptions{MaximumConcurrency: 20})
	stock := reliablequeue.New(f.stack, "Stock", &reliablequeue.Props{Fifo: true, Context: core.Context{DataKey: f.key, Alerts: f.alerts}})
	stock.AddConsumer(f.fn("StockFn", 10), reliablequeue.ConsumerOptions{MaximumConcurrency: 10})
	// Plain L2 resources that follow the rules pass too.
	plain := f.queueWithDLQ("Plain", 60)
	f.fn("PlainFn", 10).AddEventSource(awslambdaeventsources.NewSqsEventSource(plain, &awslambdaeventsources.SqsEventSourceProps{
		ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(2),
	}))
	if errs := f.messages("error"); len(errs) > 0 {
		t.Fatalf("compliant setup has errors:\n%s", strings.Join(errs, "\n"))
	}
	if w := f.messages("warning"); len(w) > 0 {
		t.Fatalf("compliant setup has warnings:\n%s", strings.Join(w, "\n"))
	}
}

func TestQueueWithoutDLQ(t *testing.T) {
	f := newFixture()
	awssqs.NewQueue(f.stack, jsii.String("Lonely"), &awssqs.QueueProps{QueueName: jsii.String("cola-sola")})
	requireContains(t, f.errorsFor(guardrails.RuleQueueWithoutDLQ), "Checks/Lonely/Resource", `"cola-sola"`, "no dead-letter queue")
	// The DLQ of a compliant queue is not reported for lacking a DLQ itself.
	f2 := newFixture()
	f2.queueWithDLQ("Ok", 30)
	if e := f2.errorsFor(guardrails.RuleQueueWithoutDLQ); len(e) > 0 {
		t.Fatalf("unexpected: %v", e)
	}
}

func TestSubscriptionDLQCountsAsDLQ(t *testing.T) {
	f := newFixture()
	topic := awssns.NewTopic(f.stack, jsii.String("Topic"), nil)
	q := f.queueWithDLQ("Target", 30)
	subDlq := awssqs.NewQueue(f.stack, jsii.String("SubDlq"), nil)
	topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(q, &awssnssubscriptions.SqsSubscriptionProps{DeadLetterQueue: subDlq}))
	if e := f.errorsFor(guardrails.RuleQueueWithoutDLQ); len(e) > 0 {
		t.Fatalf("subscription DLQ reported as lacking a DLQ: %v", e)
	}
	// ... but it still needs its alarm.
	requireContains(t, f.errorsFor(guardrails.RuleDLQWithoutAlarm), "Checks/SubDlq/Resource", "has no alarm on ApproximateNumberOfMessagesVisible")
}

func TestDLQWithoutAlarm(t *testing.T) {
	cases := []struct {
		name  string
		alarm func(f *fixture, dlq awssqs.Queue)
		want  []string
	}{
		{"no alarm", func(*fixture, awssqs.Queue) {}, []string{"no alarm on ApproximateNumberOfMessagesVisible > 0", "Checks/Src/Resource"}},
		{"alarm without actions", func(f *fixture, dlq awssqs.Queue) {
			dlq.MetricApproximateNumberOfMessagesVisible(nil).CreateAlarm(f.stack, jsii.String("Silent"), &awscloudwatch.CreateAlarmOptions{
				Threshold: jsii.Number(0), EvaluationPeriods: jsii.Number(1), ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			})
		}, []string{"no usable alarm", "no enabled AlarmActions"}},
		{"alarm that waits for 100 messages", func(f *fixture, dlq awssqs.Queue) {
			reliablequeue.NewDeadLetterAlarm(f.stack, "Ok", awssqs.NewQueue(f.stack, jsii.String("Other"), nil), f.alerts, "x") // alarm on another queue
			dlq.MetricApproximateNumberOfMessagesVisible(nil).CreateAlarm(f.stack, jsii.String("Late"), &awscloudwatch.CreateAlarmOptions{
				Threshold: jsii.Number(100), EvaluationPeriods: jsii.Number(1),
			})
		}, []string{"does not fire on the first message"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			dlq := awssqs.NewQueue(f.stack, jsii.String("Dlq"), &awssqs.QueueProps{QueueName: jsii.String("fallidos"), RetentionPeriod: awscdk.Duration_Days(jsii.Number(14))})
			awssqs.NewQueue(f.stack, jsii.String("Src"), &awssqs.QueueProps{DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(4)}})
			tc.alarm(f, dlq)
			requireContains(t, f.errorsFor(guardrails.RuleDLQWithoutAlarm), append([]string{`"fallidos"`}, tc.want...)...)
		})
	}
}

func TestVisibilityBelowSixTimesTimeout(t *testing.T) {
	// The double charge on plain L2 resources: visibility 120 s vs read timeout 180 s.
	f := newFixture()
	q := f.queueWithDLQ("Pedidos", 120)
	f.fn("Cobro", 180).AddEventSource(awslambdaeventsources.NewSqsEventSource(q, &awslambdaeventsources.SqsEventSourceProps{
		ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(20),
	}))
	requireContains(t, f.errorsFor(guardrails.RuleVisibilityTimeout), "VisibilityTimeout 120 s", "Checks/Cobro", "(180 s)", "= 1080 s")

	// The fix: 400 s with a 66 s consumer.
	f2 := newFixture()
	q2 := f2.queueWithDLQ("Pedidos", 400)
	f2.fn("Cobro", 66).AddEventSource(awslambdaeventsources.NewSqsEventSource(q2, &awslambdaeventsources.SqsEventSourceProps{
		ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(20),
	}))
	if e := f2.messages("error"); len(e) > 0 {
		t.Fatalf("fixed configuration has errors: %v", e)
	}
}

func TestVisibilityThroughAliasAndBatchingWindow(t *testing.T) {
	f := newFixture()
	q := f.queueWithDLQ("Q", 100)
	alias := awslambda.NewAlias(f.stack, jsii.String("Live"), &awslambda.AliasProps{AliasName: jsii.String("live"), Version: f.fn("Fn", 15).CurrentVersion()})
	alias.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, &awslambdaeventsources.SqsEventSourceProps{
		ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(2), BatchSize: jsii.Number(100),
		MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(20)),
	}))
	requireContains(t, f.errorsFor(guardrails.RuleVisibilityTimeout), "VisibilityTimeout 100 s", "(15 s) + batching window 20 s = 110 s")
}

func TestVisibilityWithLiteralArnsAndDefaults(t *testing.T) {
	// L1 resources referring to each other by literal names/ARNs, with
	// CloudFormation defaults (visibility 30 s, timeout 3 s -> 18 s: fine;
	// timeout 10 s -> 60 s: not fine).
	f := newFixture()
	dlq := awssqs.NewCfnQueue(f.stack, jsii.String("L1Dlq"), &awssqs.CfnQueueProps{QueueName: jsii.String("l1-dlq"), MessageRetentionPeriod: jsii.Number(1209600)})
	reliablequeue.NewDeadLetterAlarm(f.stack, "L1DlqAlarm", awssqs.Queue_FromQueueAttributes(f.stack, jsii.String("L1DlqRef"), &awssqs.QueueAttributes{QueueArn: dlq.AttrArn(), QueueName: dlq.AttrQueueName()}), f.alerts, "x")
	awssqs.NewCfnQueue(f.stack, jsii.String("L1Src"), &awssqs.CfnQueueProps{
		QueueName:     jsii.String("l1-src"),
		RedrivePolicy: map[string]any{"deadLetterTargetArn": "arn:aws:sqs:eu-west-1:111111111111:l1-dlq", "maxReceiveCount": 4},
	})
	awslambda.NewCfnFunction(f.stack, jsii.String("L1Fn"), &awslambda.CfnFunctionProps{
		FunctionName: jsii.String("l1-fn"), Role: jsii.String("arn:aws:iam::111111111111:role/r"), Timeout: jsii.Number(10),
		Code: &awslambda.CfnFunction_CodeProperty{ZipFile: jsii.String("x")}, Runtime: jsii.String("nodejs22.x"), Handler: jsii.String("index.h"),
	})
	awslambda.NewCfnEventSourceMapping(f.stack, jsii.String("L1Esm"), &awslambda.CfnEventSourceMappingProps{
		EventSourceArn:        jsii.String("arn:aws:sqs:eu-west-1:111111111111:l1-src"),
		FunctionName:          jsii.String("l1-fn"),
		FunctionResponseTypes: jsii.Strings("ReportBatchItemFailures"),
		ScalingConfig:         &awslambda.CfnEventSourceMapping_ScalingConfigProperty{MaximumConcurrency: jsii.Number(2)},
	})
	errs := f.messages("error")
	requireContains(t, errs, "[MF-SQS-VISIBILITY]", "VisibilityTimeout 30 s", "(10 s)", "= 60 s")
	if len(errs) != 1 {
		t.Fatalf("want only the visibility error, got:\n%s", strings.Join(errs, "\n"))
	}
}

func TestSNSSubscriptionToLambda(t *testing.T) {
	f := newFixture()
	topic := awssns.NewTopic(f.stack, jsii.String("Confirmado"), &awssns.TopicProps{TopicName: jsii.String("mercadofresco-pedido-confirmado")})
	topic.AddSubscription(awssnssubscriptions.NewLambdaSubscription(f.fn("Correo", 10), nil))
	requireContains(t, f.errorsFor(guardrails.RuleSNSToLambda), "mercadofresco-pedido-confirmado", "protocol lambda")

	// Inline subscription on an L1 topic.
	f2 := newFixture()
	awssns.NewCfnTopic(f2.stack, jsii.String("Inline"), &awssns.CfnTopicProps{Subscription: &[]any{
		&awssns.CfnTopic_SubscriptionProperty{Protocol: jsii.String("lambda"), Endpoint: jsii.String("arn:aws:lambda:eu-west-1:111111111111:function:x")},
	}})
	requireContains(t, f2.errorsFor(guardrails.RuleSNSToLambda), "Checks/Inline")
}

func TestFifoQueueWithStandardDLQ(t *testing.T) {
	f := newFixture()
	dlq := awssqs.NewCfnQueue(f.stack, jsii.String("StdDlq"), &awssqs.CfnQueueProps{QueueName: jsii.String("std-dlq")})
	reliablequeue.NewDeadLetterAlarm(f.stack, "StdDlqAlarm", awssqs.Queue_FromQueueAttributes(f.stack, jsii.String("StdDlqRef"), &awssqs.QueueAttributes{QueueArn: dlq.AttrArn(), QueueName: dlq.AttrQueueName()}), f.alerts, "x")
	awssqs.NewCfnQueue(f.stack, jsii.String("Fifo"), &awssqs.CfnQueueProps{
		FifoQueue:     jsii.Bool(true),
		RedrivePolicy: map[string]any{"deadLetterTargetArn": dlq.AttrArn(), "maxReceiveCount": 4},
	})
	requireContains(t, f.errorsFor(guardrails.RuleFifoDLQType), "Checks/Fifo", "is FIFO but its DLQ", `"std-dlq"`, "is standard")
}

func TestDLQRetentionNotLongerThanSource(t *testing.T) {
	f := newFixture()
	dlq := awssqs.NewQueue(f.stack, jsii.String("Dlq"), nil) // 4 days, same as the source
	reliablequeue.NewDeadLetterAlarm(f.stack, "DlqAlarm", dlq, f.alerts, "x")
	awssqs.NewQueue(f.stack, jsii.String("Src"), &awssqs.QueueProps{DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(4)}})
	requireContains(t, f.errorsFor(guardrails.RuleDLQRetention), "345600 s", "Checks/Src")
}

func TestEventSourceMappingWithoutCeilingOrPartialBatch(t *testing.T) {
	cases := []struct {
		name  string
		props *awslambdaeventsources.SqsEventSourceProps
		rules []string
	}{
		{"neither", &awslambdaeventsources.SqsEventSourceProps{}, []string{guardrails.RuleESMMaximumConcurrency, guardrails.RuleESMReportBatchItemFailures}},
		{"no maximum concurrency", &awslambdaeventsources.SqsEventSourceProps{ReportBatchItemFailures: jsii.Bool(true)}, []string{guardrails.RuleESMMaximumConcurrency}},
		{"no partial batch", &awslambdaeventsources.SqsEventSourceProps{MaxConcurrency: jsii.Number(5)}, []string{guardrails.RuleESMReportBatchItemFailures}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			q := f.queueWithDLQ("Q", 60)
			f.fn("Fn", 10).AddEventSource(awslambdaeventsources.NewSqsEventSource(q, tc.props))
			errs := f.messages("error")
			if len(errs) != len(tc.rules) {
				t.Fatalf("want %d errors, got:\n%s", len(tc.rules), strings.Join(errs, "\n"))
			}
			for _, r := range tc.rules {
				requireContains(t, f.errorsFor(r), "Checks/Fn/SqsEventSource")
			}
		})
	}
}

func TestAcknowledge(t *testing.T) {
	f := newFixture()
	q := awssqs.NewQueue(f.stack, jsii.String("Scratch"), nil)
	guardrails.Acknowledge(q, guardrails.RuleQueueWithoutDLQ, "test scratch queue: messages are disposable")
	if e := f.messages("error"); len(e) > 0 {
		t.Fatalf("acknowledged finding still reported: %v", e)
	}
	f2 := newFixture()
	guardrails.Acknowledge(awssqs.NewQueue(f2.stack, jsii.String("Scratch"), nil), guardrails.RuleQueueWithoutDLQ, " ")
	requireContains(t, f2.messages("error"), "needs a reason")
}

func TestAppliedTwiceReportsOnce(t *testing.T) {
	f := newFixture() // applied to the app
	guardrails.Apply(f.stack)
	awssqs.NewQueue(f.stack, jsii.String("Lonely"), nil)
	if e := f.errorsFor(guardrails.RuleQueueWithoutDLQ); len(e) != 1 {
		t.Fatalf("want one finding, got %d: %v", len(e), e)
	}
}

func TestMaximumConcurrencyAboveReservedConcurrency(t *testing.T) {
	for _, tc := range []struct {
		reserved float64
		fires    bool
	}{{reserved: 5, fires: true}, {reserved: 10, fires: false}} {
		t.Run(fmt.Sprint(tc.reserved), func(t *testing.T) {
			f := newFixture()
			fn := awslambda.NewFunction(f.stack, jsii.String("Fn"), &awslambda.FunctionProps{
				Runtime: awslambda.Runtime_NODEJS_22_X(), Handler: jsii.String("index.handler"),
				Code:                         awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
				Timeout:                      awscdk.Duration_Seconds(jsii.Number(5)),
				ReservedConcurrentExecutions: jsii.Number(tc.reserved),
			})
			for _, id := range []string{"A", "B"} {
				fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(f.queueWithDLQ(id, 60), &awslambdaeventsources.SqsEventSourceProps{
					ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(5),
				}))
			}
			errs := f.errorsFor(guardrails.RuleESMReservedConcurrency)
			if !tc.fires {
				if len(errs) > 0 {
					t.Fatalf("unexpected: %v", errs)
				}
				return
			}
			requireContains(t, errs, "allow 10 concurrent invocations", "ReservedConcurrentExecutions is 5")
		})
	}
}
