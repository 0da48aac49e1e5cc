package queues_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// fixture is a stack with stand-ins for the platform's data key and alerts topic.
type fixture struct {
	app    awscdk.App
	stack  awscdk.Stack
	key    awskms.Key
	alerts awssns.Topic
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	p := cdktest.NewPlatform("Test")
	return &fixture{app: p.App, stack: p.Stack, key: p.Key, alerts: p.Alerts}
}

func (f *fixture) props() *queues.QueueProps {
	return &queues.QueueProps{Context: core.Context{DataKey: f.key, Alerts: f.alerts}}
}

// function is a stand-in consumer; only its timeout matters here.
func (f *fixture) function(id string, timeoutSeconds float64) awslambda.Function {
	return awslambda.NewFunction(f.stack, jsii.String(id), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
		Timeout: awscdk.Duration_Seconds(jsii.Number(timeoutSeconds)),
	})
}

// errors returns the synth error messages of the fixture's stack.
func (f *fixture) errors() []string { return cdktest.Errors(f.stack) }

func (f *fixture) requireNoErrors(t *testing.T) {
	t.Helper()
	if errs := f.errors(); len(errs) > 0 {
		t.Fatalf("unexpected synth errors:\n%s", strings.Join(errs, "\n"))
	}
}

func (f *fixture) requireError(t *testing.T, parts ...string) {
	t.Helper()
	cdktest.RequireContains(t, f.errors(), parts...)
}

func (f *fixture) template(t *testing.T) assertions.Template {
	t.Helper()
	return assertions.Template_FromStack(f.stack, nil)
}

// resources returns the synthesized resources of one type keyed by logical id.
func resources(tpl assertions.Template, typ string) map[string]map[string]any {
	raw := tpl.FindResources(jsii.String(typ), nil)
	b, _ := json.Marshal(raw)
	var out map[string]map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

func TestDefaults(t *testing.T) {
	f := newFixture(t)
	queues.NewQueue(f.stack, "Pedidos", &queues.QueueProps{
		QueueName:           jsii.String("cola-mercadofresco-pedidos"),
		DeadLetterQueueName: jsii.String("mercadofresco-pedidos-fallidos"),
		Context:             core.Context{DataKey: f.key, Alerts: f.alerts},
	})
	f.requireNoErrors(t)
	tpl := f.template(t)
	keyRef := map[string]any{"Fn::GetAtt": []any{logicalID(t, tpl, "AWS::KMS::Key"), "Arn"}}

	// Source: 4 days, redrive to the DLQ with maxReceiveCount 4, KMS data key.
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName":                    "cola-mercadofresco-pedidos",
		"MessageRetentionPeriod":       4 * 24 * 3600,
		"KmsMasterKeyId":               keyRef,
		"KmsDataKeyReusePeriodSeconds": 300,
		"RedrivePolicy": map[string]any{
			"deadLetterTargetArn": assertions.Match_AnyValue(),
			"maxReceiveCount":     4,
		},
	})
	// DLQ: 14 days, same key, redrive-allow byQueue naming only the source.
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName":              "mercadofresco-pedidos-fallidos",
		"MessageRetentionPeriod": 14 * 24 * 3600,
		"KmsMasterKeyId":         keyRef,
		"RedriveAllowPolicy": map[string]any{
			"redrivePermission": "byQueue",
			"sourceQueueArns": []any{map[string]any{"Fn::Join": []any{"", []any{
				"arn:", map[string]any{"Ref": "AWS::Partition"}, ":sqs:eu-west-1:111111111111:cola-mercadofresco-pedidos",
			}}}},
		},
	})
	// Neither queue is FIFO, and exactly two queues exist.
	qs := resources(tpl, "AWS::SQS::Queue")
	if len(qs) != 2 {
		t.Fatalf("want 2 queues, got %d", len(qs))
	}
	for id, q := range qs {
		if _, ok := q["Properties"].(map[string]any)["FifoQueue"]; ok {
			t.Errorf("%s: standard queue must not set FifoQueue", id)
		}
	}
	// SSL enforced on both queues.
	tpl.ResourceCountIs(jsii.String("AWS::SQS::QueuePolicy"), jsii.Number(2))
	tpl.AllResourcesProperties(jsii.String("AWS::SQS::QueuePolicy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Action":    "sqs:*",
			"Effect":    "Deny",
			"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
			"Principal": map[string]any{"AWS": "*"},
		})})},
	})
	alertsRef := map[string]any{"Ref": logicalID(t, tpl, "AWS::SNS::Topic")}
	// DLQ alarm: visible > 0, 5 min, Maximum, alarm and OK actions, missing not breaching.
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName":         "ApproximateNumberOfMessagesVisible",
		"Namespace":          "AWS/SQS",
		"Dimensions":         []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("PedidosDeadLetterQueue")), "QueueName"}}}},
		"Threshold":          0,
		"ComparisonOperator": "GreaterThanThreshold",
		"Period":             300,
		"Statistic":          "Maximum",
		"EvaluationPeriods":  1,
		"DatapointsToAlarm":  1,
		"TreatMissingData":   "notBreaching",
		"AlarmActions":       []any{alertsRef},
		"OKActions":          []any{alertsRef},
	})
	// Source age alarm: default 3 h threshold.
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName":         "ApproximateAgeOfOldestMessage",
		"Dimensions":         []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("PedidosQueue")), "QueueName"}}}},
		"Threshold":          10800,
		"ComparisonOperator": "GreaterThanThreshold",
		"Period":             300,
		"Statistic":          "Maximum",
		"TreatMissingData":   "notBreaching",
		"AlarmActions":       []any{alertsRef},
		"OKActions":          []any{alertsRef},
	})
}

func logicalID(t *testing.T, tpl assertions.Template, typ string) string {
	t.Helper()
	rs := resources(tpl, typ)
	if len(rs) != 1 {
		t.Fatalf("want exactly one %s, got %d", typ, len(rs))
	}
	for id := range rs {
		return id
	}
	return ""
}

func TestDefaultNamesAreDeterministicAndPaired(t *testing.T) {
	f := newFixture(t)
	queues.NewQueue(f.stack, "Anon", f.props())
	f.requireNoErrors(t)
	tpl := f.template(t)
	names := map[string]bool{}
	for _, r := range resources(tpl, "AWS::SQS::Queue") {
		names[r["Properties"].(map[string]any)["QueueName"].(string)] = true
	}
	found := false
	for n := range names {
		if names[n+"-dlq"] {
			found = true
		}
	}
	if !found {
		t.Fatalf("DLQ name is not source name + -dlq: %v", names)
	}
}

func TestFifoGetsFifoDeadLetterQueue(t *testing.T) {
	f := newFixture(t)
	p := f.props()
	p.QueueName = jsii.String("mercadofresco-movimientos-stock")
	p.Fifo = true
	p.HighThroughputFifo = true
	queues.NewQueue(f.stack, "Stock", p)
	f.requireNoErrors(t)
	tpl := f.template(t)
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName":           "mercadofresco-movimientos-stock.fifo",
		"FifoQueue":           true,
		"DeduplicationScope":  "messageGroup",
		"FifoThroughputLimit": "perMessageGroupId",
		"RedrivePolicy":       assertions.Match_ObjectLike(&map[string]any{"maxReceiveCount": 4}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName": "mercadofresco-movimientos-stock-dlq.fifo",
		"FifoQueue": true,
	})
}

func TestSQSManagedEncryptionWhenChosen(t *testing.T) {
	f := newFixture(t)
	queues.NewQueue(f.stack, "Tech", &queues.QueueProps{Encryption: queues.EncryptionSQSManaged, Context: core.Context{Alerts: f.alerts}})
	f.requireNoErrors(t)
	tpl := f.template(t)
	tpl.AllResourcesProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"SqsManagedSseEnabled": true})
}

func TestInvalidProps(t *testing.T) {
	cases := []struct {
		name  string
		props func(f *fixture) *queues.QueueProps
		want  []string
	}{
		{"zero value needs the data key", func(f *fixture) *queues.QueueProps {
			return &queues.QueueProps{Context: core.Context{Alerts: f.alerts}}
		}, []string{"DataKey is required", "alias/mercadofresco-datos"}},
		{"zero value needs the alerts topic", func(f *fixture) *queues.QueueProps {
			return &queues.QueueProps{Context: core.Context{DataKey: f.key}}
		}, []string{"Alerts is required"}},
		{"max receive count range", func(f *fixture) *queues.QueueProps {
			p := f.props()
			p.MaxReceiveCount = 1001
			return p
		}, []string{"MaxReceiveCount", "1001"}},
		{"DLQ retention not longer than source", func(f *fixture) *queues.QueueProps {
			p := f.props()
			p.DeadLetterRetentionPeriod = awscdk.Duration_Days(jsii.Number(4))
			return p
		}, []string{"DeadLetterRetentionPeriod (345600 s)", "RetentionPeriod (345600 s)"}},
		{"age alarm after expiry", func(f *fixture) *queues.QueueProps {
			p := f.props()
			p.OldestMessageAgeThreshold = awscdk.Duration_Days(jsii.Number(5))
			return p
		}, []string{"OldestMessageAgeThreshold (432000 s)"}},
		{"fifo options on a standard queue", func(f *fixture) *queues.QueueProps {
			p := f.props()
			p.ContentBasedDeduplication = true
			return p
		}, []string{"only to FIFO queues"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			queues.NewQueue(f.stack, "Q", tc.props(f))
			f.requireError(t, tc.want...)
		})
	}
}

func TestMaxReceiveCountOverride(t *testing.T) {
	f := newFixture(t)
	p := f.props()
	p.MaxReceiveCount = 5
	q := queues.NewQueue(f.stack, "Erp", p)
	f.requireNoErrors(t)
	if q.MaxReceiveCount != 5 {
		t.Fatalf("MaxReceiveCount = %v", q.MaxReceiveCount)
	}
	f.template(t).HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"RedrivePolicy": assertions.Match_ObjectLike(&map[string]any{"maxReceiveCount": 5}),
	})
}

func TestStandaloneDeadLetterQueue(t *testing.T) {
	f := newFixture(t)
	d := queues.NewDeadLetterQueue(f.stack, "RuleDlq", &queues.DeadLetterQueueProps{
		QueueName: jsii.String("mercadofresco-regla-dlq"), Context: core.Context{DataKey: f.key, Alerts: f.alerts},
		Source: "EventBridge rule PedidoCreado -> procesar-pedido",
	})
	if d.Alarm == nil || d.Queue == nil {
		t.Fatal("missing queue or alarm")
	}
	f.requireNoErrors(t)
	tpl := f.template(t)
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName":              "mercadofresco-regla-dlq",
		"MessageRetentionPeriod": 14 * 24 * 3600,
		"KmsMasterKeyId":         assertions.Match_AnyValue(),
		"RedriveAllowPolicy":     map[string]any{"redrivePermission": "denyAll"},
	})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "ApproximateNumberOfMessagesVisible", "Threshold": 0,
		"AlarmDescription": assertions.Match_StringLikeRegexp(jsii.String("EventBridge rule PedidoCreado")),
	})
	// The cdk-nag SQS3 acknowledgement carries the reason.
	tpl.HasResource(jsii.String("AWS::SQS::Queue"), map[string]any{
		"Metadata": map[string]any{"cdk_nag": map[string]any{"rules_to_suppress": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"id": "AwsSolutions-SQS3", "reason": assertions.Match_StringLikeRegexp(jsii.String("IS a dead-letter queue"))}),
		})}},
	})

	f2 := newFixture(t)
	queues.NewDeadLetterQueue(f2.stack, "Bad", &queues.DeadLetterQueueProps{Context: core.Context{Alerts: f2.alerts}})
	f2.requireError(t, "Source is required")
	f2.requireError(t, "DataKey is required")
}

// Every grant of the package on the queue's key (consume with AddConsumer,
// send, send to the DLQ, read the DLQ, GrantKeyThroughSQS) lets the grantee
// use the key through SQS only.
func TestGrantsUseTheKeyThroughSQSOnly(t *testing.T) {
	f := newFixture(t)
	q := queues.NewQueue(f.stack, "Pedidos", f.props())
	d := queues.NewDeadLetterQueue(f.stack, "RuleDlq", &queues.DeadLetterQueueProps{Context: core.Context{DataKey: f.key, Alerts: f.alerts}, Source: "a rule"})
	q.AddConsumer(f.function("Consumidor", 60), queues.ConsumerOptions{MaximumConcurrency: 2})
	q.GrantSendMessages(f.function("Productor", 10))
	d.GrantConsumeMessages(f.function("Operador", 10))
	queues.GrantKeyThroughSQS(d.Queue, f.function("Tubo", 10), "kms:GenerateDataKey")
	f.requireNoErrors(t)
	kmsStatements := 0
	for id, p := range resources(f.template(t), "AWS::IAM::Policy") {
		for _, st := range p["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			raw, _ := json.Marshal(st)
			if !strings.Contains(string(raw), `"kms:`) {
				continue
			}
			kmsStatements++
			if !strings.Contains(string(raw), `"Condition":{"StringEquals":{"kms:ViaService":"sqs.eu-west-1.amazonaws.com"}}`) {
				t.Errorf("%s: %s uses the key without kms:ViaService sqs", id, raw)
			}
		}
	}
	if kmsStatements < 4 {
		t.Fatalf("%d statements on the key, want one per grantee at least", kmsStatements)
	}
}
