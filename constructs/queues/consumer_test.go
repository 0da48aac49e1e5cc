package queues_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

func TestAddConsumerWiresMappingAndDerivesVisibility(t *testing.T) {
	f := newFixture(t)
	q := queues.NewQueue(f.stack, "Pedidos", f.props())
	fn := f.function("PrepararPedido", 60)
	esm := q.AddConsumer(fn, queues.ConsumerOptions{MaximumConcurrency: 20})
	if esm == nil {
		t.Fatal("AddConsumer returned nil")
	}
	f.requireNoErrors(t)
	if got := q.VisibilityTimeoutSeconds(); got != 360 {
		t.Fatalf("VisibilityTimeoutSeconds = %v, want 360 (6 x 60 s)", got)
	}
	tpl := f.template(t)
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"EventSourceArn":        map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("PedidosQueue")), "Arn"}},
		"FunctionResponseTypes": []any{"ReportBatchItemFailures"},
		"BatchSize":             10,
		"ScalingConfig":         map[string]any{"MaximumConcurrency": 20},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"VisibilityTimeout": 360,
		"RedrivePolicy":     assertions.Match_AnyValue(),
	})
	// Consume on the queue with kms:Decrypt, send on the DLQ, DLQ URL in the environment.
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"Action": assertions.Match_ArrayWith(&[]any{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage"})}),
			assertions.Match_ObjectLike(&map[string]any{"Action": "kms:Decrypt"}),
			assertions.Match_ObjectLike(&map[string]any{"Action": assertions.Match_ArrayWith(&[]any{"sqs:SendMessage"})}),
		})},
	})
	// Least privilege for the DLQ send: no KMS wildcard actions (cdk-nag IAM5).
	for id, p := range resources(tpl, "AWS::IAM::Policy") {
		b, _ := json.Marshal(p)
		if strings.Contains(string(b), "kms:ReEncrypt*") || strings.Contains(string(b), "kms:GenerateDataKey*") {
			t.Errorf("%s grants KMS wildcard actions: %s", id, b)
		}
	}
	routes := dlqRoutes(t, tpl)
	if len(routes) != 1 || !strings.Contains(routes[q.QueueName], "PedidosDeadLetterQueue") {
		t.Fatalf("DLQ_URLS routes = %v, want %s -> its DLQ", routes, q.QueueName)
	}
}

// dlqRoutes returns the one function's DLQ_URLS with the DLQ references
// rendered as text (the value is an Fn::Join of literal JSON and Refs).
func dlqRoutes(t *testing.T, tpl assertions.Template) map[string]string {
	t.Helper()
	for _, fn := range resources(tpl, "AWS::Lambda::Function") {
		vars, _ := fn["Properties"].(map[string]any)["Environment"].(map[string]any)["Variables"].(map[string]any)
		v, ok := vars[lambdaapi.EnvDLQRoutes]
		if !ok {
			continue
		}
		var text strings.Builder
		parts := v.(map[string]any)["Fn::Join"].([]any)[1].([]any)
		for _, p := range parts {
			switch x := p.(type) {
			case string:
				text.WriteString(x)
			case map[string]any:
				text.WriteString(fmt.Sprint(x["Ref"]))
			}
		}
		var routes map[string]string
		if err := json.Unmarshal([]byte(text.String()), &routes); err != nil {
			t.Fatalf("DLQ_URLS is not a JSON object: %s: %v", text.String(), err)
		}
		return routes
	}
	t.Fatal("no function has DLQ_URLS")
	return nil
}

// Regression: a function consuming two queues had one DLQ_URL, so poison
// from one queue went to the other's DLQ.
func TestOneFunctionTwoQueuesRoutesEachToItsOwnDLQ(t *testing.T) {
	f := newFixture(t)
	a := queues.NewQueue(f.stack, "Correo", f.props())
	b := queues.NewQueue(f.stack, "AvisoERP", f.props())
	fn := f.function("Notificador", 30)
	a.AddConsumer(fn, queues.ConsumerOptions{MaximumConcurrency: 5})
	b.AddConsumer(fn, queues.ConsumerOptions{MaximumConcurrency: 5})
	f.requireNoErrors(t)
	routes := dlqRoutes(t, f.template(t))
	if len(routes) != 2 || !strings.Contains(routes[a.QueueName], "CorreoDeadLetterQueue") || !strings.Contains(routes[b.QueueName], "AvisoERPDeadLetterQueue") {
		t.Fatalf("routes = %v, want each queue to its own DLQ", routes)
	}
}

func TestConsumingTheSameQueueTwiceFailsSynth(t *testing.T) {
	f := newFixture(t)
	q := queues.NewQueue(f.stack, "Pedidos", f.props())
	fn := f.function("PrepararPedido", 60)
	q.AddConsumer(fn, queues.ConsumerOptions{MaximumConcurrency: 5})
	if esm := q.AddConsumer(fn, queues.ConsumerOptions{MaximumConcurrency: 5}); esm != nil {
		t.Fatal("second mapping on the same queue was created")
	}
	f.requireError(t, "already consumes", q.QueueName)
}

func TestImportedConsumerNeedsItsTimeout(t *testing.T) {
	f := newFixture(t)
	q := queues.NewQueue(f.stack, "Pedidos", f.props())
	imported := awslambda.Function_FromFunctionAttributes(f.stack, jsii.String("Importada"), &awslambda.FunctionAttributes{
		FunctionArn:     jsii.String("arn:aws:lambda:eu-west-1:111111111111:function:externa"),
		Role:            awsiam.Role_FromRoleArn(f.stack, jsii.String("RolImportado"), jsii.String("arn:aws:iam::111111111111:role/externa"), nil),
		SameEnvironment: jsii.Bool(true),
	})
	if esm := q.AddConsumer(imported, queues.ConsumerOptions{MaximumConcurrency: 5}); esm != nil {
		t.Fatal("mapping created without knowing the imported function's timeout")
	}
	f.requireError(t, "imported function", "FunctionTimeout")
	q2 := queues.NewQueue(f.stack, "Correo", f.props())
	if esm := q2.AddConsumer(imported, queues.ConsumerOptions{MaximumConcurrency: 5, FunctionTimeout: awscdk.Duration_Seconds(jsii.Number(40))}); esm == nil {
		t.Fatal("mapping not created with an explicit timeout")
	}
	if got := q2.VisibilityTimeoutSeconds(); got != 240 {
		t.Fatalf("visibility %v, want 6 x 40 s", got)
	}
}

func TestBatchingWindowAddsToDerivedVisibility(t *testing.T) {
	f := newFixture(t)
	q := queues.NewQueue(f.stack, "Correo", f.props())
	q.AddConsumer(f.function("EnviarCorreo", 20), queues.ConsumerOptions{
		MaximumConcurrency: 5, BatchSize: 50, MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(10)),
	})
	f.requireNoErrors(t)
	if got := q.VisibilityTimeoutSeconds(); got != 130 {
		t.Fatalf("VisibilityTimeoutSeconds = %v, want 130 (6 x 20 s + 10 s window)", got)
	}
	f.template(t).HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"BatchSize": 50, "MaximumBatchingWindowInSeconds": 10,
	})
}

// The double charge of docs/design.md#visibility-timeout: visibility 120 s
// with a consumer that can take 180 s (the gateway read timeout). It must
// not synthesise.
func TestDoubleChargeConfigurationDoesNotSynthesise(t *testing.T) {
	f := newFixture(t)
	p := f.props()
	p.QueueName = jsii.String("cola-mercadofresco-pedidos")
	p.VisibilityTimeout = awscdk.Duration_Seconds(jsii.Number(120))
	q := queues.NewQueue(f.stack, "Pedidos", p)
	q.AddConsumer(f.function("Cobro", 180), queues.ConsumerOptions{MaximumConcurrency: 20})
	f.requireError(t, "VisibilityTimeout 120 s", "(180 s)", "1080 s")
}

// The fix: 400 s visibility with a consumer whose worst case is
// bounded to 66 s (30 s read timeout, SDK max_attempts 2, margin): 6 x 66 = 396 <= 400.
func TestFixedConfigurationSynthesises(t *testing.T) {
	f := newFixture(t)
	p := f.props()
	p.VisibilityTimeout = awscdk.Duration_Seconds(jsii.Number(400))
	q := queues.NewQueue(f.stack, "Pedidos", p)
	q.AddConsumer(f.function("Cobro", 66), queues.ConsumerOptions{MaximumConcurrency: 20})
	f.requireNoErrors(t)
	f.template(t).HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"VisibilityTimeout": 400})
}

func TestConsumerOptionErrors(t *testing.T) {
	cases := []struct {
		name string
		fifo bool
		opts queues.ConsumerOptions
		want []string
	}{
		{"maximum concurrency required", false, queues.ConsumerOptions{}, []string{"MaximumConcurrency is required"}},
		{"maximum concurrency below 2", false, queues.ConsumerOptions{MaximumConcurrency: 1}, []string{"between 2 and 1000, got 1"}},
		{"maximum concurrency above 1000", false, queues.ConsumerOptions{MaximumConcurrency: 1001}, []string{"got 1001"}},
		{"batch above 10 without window", false, queues.ConsumerOptions{MaximumConcurrency: 2, BatchSize: 11}, []string{"BatchSize 11 exceeds 10"}},
		{"fifo batching window", true, queues.ConsumerOptions{MaximumConcurrency: 2, MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(5))}, []string{"not supported for FIFO"}},
		{"window above 5 minutes", false, queues.ConsumerOptions{MaximumConcurrency: 2, MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(301))}, []string{"between 0 and 300 s"}},
		{"copies to a fifo queue", true, queues.ConsumerOptions{MaximumConcurrency: 2, SendsCopies: true}, []string{"SendsCopies is for standard queues"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			p := f.props()
			p.Fifo = tc.fifo
			q := queues.NewQueue(f.stack, "Q", p)
			if esm := q.AddConsumer(f.function("Fn", 10), tc.opts); esm != nil {
				t.Error("AddConsumer returned a mapping for invalid options")
			}
			f.requireError(t, tc.want...)
			f.template(t).ResourceCountIs(jsii.String("AWS::Lambda::EventSourceMapping"), jsii.Number(0))
		})
	}
}

func TestTwoConsumersTakeTheLargestVisibility(t *testing.T) {
	f := newFixture(t)
	q := queues.NewQueue(f.stack, "Q", f.props())
	q.AddConsumer(f.function("Slow", 50), queues.ConsumerOptions{MaximumConcurrency: 2})
	q.AddConsumer(f.function("Fast", 5), queues.ConsumerOptions{MaximumConcurrency: 2})
	f.requireNoErrors(t)
	f.template(t).HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"VisibilityTimeout": 300})
}
