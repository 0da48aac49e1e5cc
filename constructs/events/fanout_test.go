package events_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
)

type fixture struct {
	stack  awscdk.Stack
	key    awskms.Key
	alerts awssns.Topic
}

// newFixture builds a stack with nag-clean stand-ins for the platform key
// and alerts topic, with cdk-nag and the checks applied.
func newFixture() *fixture {
	p := cdktest.NewPlatform("Fanout")
	app, stack, key, alerts := p.App, p.Stack, p.Key, p.Alerts
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	cdktest.Check(app)
	return &fixture{stack: stack, key: key, alerts: alerts}
}

func (f *fixture) queue(id, name string) *queues.Queue {
	return queues.NewQueue(f.stack, id, &queues.QueueProps{QueueName: jsii.String(name), Context: core.Context{DataKey: f.key, Alerts: f.alerts}})
}

func (f *fixture) topic() *events.Topic {
	return events.NewTopic(f.stack, "PedidoConfirmado", &events.TopicProps{
		TopicName: jsii.String("mercadofresco-pedido-confirmado"), Context: core.Context{DataKey: f.key, Alerts: f.alerts},
	})
}

func (f *fixture) errors() []string { return cdktest.Errors(f.stack) }

func TestFanOutDefaults(t *testing.T) {
	f := newFixture()
	topic := f.topic()
	sub := topic.AddQueue("Pedidos", f.queue("Pedidos", "cola-mercadofresco-pedidos"), events.SubscriptionOptions{})
	if sub == nil || sub.DeadLetterQueue == nil {
		t.Fatal("AddQueue returned nil")
	}
	if errs := f.errors(); len(errs) > 0 {
		t.Fatalf("errors (cdk-nag or checks):\n%s", strings.Join(errs, "\n"))
	}
	tpl := assertions.Template_FromStack(f.stack, nil)
	keyArn := map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("DataKey")), "Arn"}}

	tpl.HasResourceProperties(jsii.String("AWS::SNS::Topic"), map[string]any{
		"TopicName":      "mercadofresco-pedido-confirmado",
		"KmsMasterKeyId": keyArn,
	})
	tpl.HasResourceProperties(jsii.String("AWS::SNS::TopicPolicy"), map[string]any{
		"Topics": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("PedidoConfirmadoTopic"))}},
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Sid": queues.SidTopicTLSOnly, "Effect": "Deny", "Action": queues.TopicActions(),
			"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
		})})},
	})
	// SQS only, raw delivery, a DLQ on the subscription.
	tpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{
		"Protocol":           "sqs",
		"RawMessageDelivery": true,
		"Endpoint":           map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("PedidosQueue")), "Arn"}},
		"RedrivePolicy": map[string]any{"deadLetterTargetArn": map[string]any{"Fn::GetAtt": []any{
			assertions.Match_StringLikeRegexp(jsii.String("PedidoConfirmadoPedidosDeadLetterQueue")), "Arn"}}},
	})
	// The subscription DLQ: named after the queue, encrypted with the data key, 14 days, denyAll.
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName":              "cola-mercadofresco-pedidos-entrega-dlq",
		"KmsMasterKeyId":         keyArn,
		"MessageRetentionPeriod": 1209600,
		"RedriveAllowPolicy":     map[string]any{"redrivePermission": "denyAll"},
	})
	// Its alarm.
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "ApproximateNumberOfMessagesVisible",
		"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{
			assertions.Match_StringLikeRegexp(jsii.String("PedidoConfirmadoPedidosDeadLetterQueue")), "QueueName"}}}},
		"Threshold": 0, "ComparisonOperator": "GreaterThanThreshold", "TreatMissingData": "notBreaching",
		"AlarmActions": assertions.Match_AnyValue(), "OKActions": assertions.Match_AnyValue(),
	})
	// The topic may send to the queue, and only this topic.
	tpl.HasResourceProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
		"Queues": []any{map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("PedidosQueue"))}},
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Action":    "sqs:SendMessage",
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "sns.amazonaws.com"},
			"Condition": map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("PedidoConfirmadoTopic"))}}},
		})})},
	})
	// Messages SNS could not even dead-letter are lost: alarm on them.
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "NumberOfNotificationsFailedToRedriveToDlq", "Namespace": "AWS/SNS", "Threshold": 0,
		"AlarmActions": assertions.Match_AnyValue(), "OKActions": assertions.Match_AnyValue(),
	})
	// The platform key is not edited by the fan-out.
	tpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]any{
		"KeyPolicy": map[string]any{"Statement": assertions.Match_Not(assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Principal": map[string]any{"Service": "sns.amazonaws.com"},
		})}))},
	})
}

func TestThreeQueuesWithFilter(t *testing.T) {
	f := newFixture()
	topic := f.topic()
	topic.AddQueue("Pedidos", f.queue("Pedidos", "cola-mercadofresco-pedidos"), events.SubscriptionOptions{})
	topic.AddQueue("Correo", f.queue("Correo", "cola-mercadofresco-correo-confirmacion"), events.SubscriptionOptions{})
	topic.AddQueue("Erp", f.queue("Erp", "cola-mercadofresco-aviso-erp"), events.SubscriptionOptions{
		FilterPolicy: map[string]awssns.SubscriptionFilter{
			"canal": awssns.SubscriptionFilter_StringFilter(&awssns.StringConditions{Allowlist: jsii.Strings("web", "app")}),
		},
	})
	if errs := f.errors(); len(errs) > 0 {
		t.Fatalf("errors:\n%s", strings.Join(errs, "\n"))
	}
	tpl := assertions.Template_FromStack(f.stack, nil)
	tpl.ResourceCountIs(jsii.String("AWS::SNS::Subscription"), jsii.Number(3))
	tpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(9)) // 3 x (queue, DLQ, subscription DLQ)
	tpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{
		"FilterPolicy": map[string]any{"canal": []any{"web", "app"}},
	})
}

func TestInvalidUse(t *testing.T) {
	cases := []struct {
		name  string
		build func(f *fixture)
		want  string
	}{
		{"no key", func(f *fixture) {
			events.NewTopic(f.stack, "T", &events.TopicProps{Context: core.Context{Alerts: f.alerts}})
		}, "DataKey is required"},
		{"no alarm topic", func(f *fixture) {
			events.NewTopic(f.stack, "T", &events.TopicProps{Context: core.Context{DataKey: f.key}})
		}, "Alerts is required"},
		{"fifo queue", func(f *fixture) {
			q := queues.NewQueue(f.stack, "Stock", &queues.QueueProps{Fifo: true, Context: core.Context{DataKey: f.key, Alerts: f.alerts}})
			f.topic().AddQueue("Stock", q, events.SubscriptionOptions{})
		}, "cannot deliver to a FIFO queue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			tc.build(f)
			errs := f.errors()
			for _, e := range errs {
				if strings.Contains(e, tc.want) {
					return
				}
			}
			t.Fatalf("no error containing %q:\n%s", tc.want, strings.Join(errs, "\n"))
		})
	}
}
