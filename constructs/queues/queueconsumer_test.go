package queues_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/queues"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/golambdatest"
)

func TestCeiling(t *testing.T) {
	for _, tc := range []struct {
		inFlight, perInvocation, env float64
		wantMax, wantBatch           float64
	}{
		{20, 5, 20, 4, 5},    // prod warehouse: 4 invocations x 5 records = 20 requests
		{4, 5, 20, 2, 2},     // a small dependency: 2 x 2
		{2, 5, 2, 2, 1},      // the minimum: 2 invocations of one record
		{1000, 5, 20, 20, 5}, // the environment's ceiling wins
		{10, 3, 20, 3, 3},
	} {
		mc, bc := queues.Ceiling(tc.inFlight, tc.perInvocation, tc.env)
		if mc != tc.wantMax || bc != tc.wantBatch {
			t.Errorf("Ceiling(%v, %v, %v) = %v, %v; want %v, %v", tc.inFlight, tc.perInvocation, tc.env, mc, bc, tc.wantMax, tc.wantBatch)
		}
		if tc.inFlight >= 4 && mc*bc > tc.inFlight {
			t.Errorf("Ceiling(%v, ...) allows %v requests at once", tc.inFlight, mc*bc)
		}
	}
}

type recordingStore struct {
	bound        []awslambda.Function
	dependencies []string
}

func (r *recordingStore) Bind(fn awslambda.Function, dependencies ...string) {
	r.bound = append(r.bound, fn)
	r.dependencies = append(r.dependencies, dependencies...)
}

func TestConsumerBundlesQueueFunctionAndDependencies(t *testing.T) {
	p := cdktest.NewPlatform("Cola")
	root, _ := filepath.Abs("testdata/fixture")
	c := queues.NewConsumer(p.Stack, "Consumidor", &queues.ConsumerProps{
		Context:  core.Context{EnvironmentName: "dev", Builder: golambdatest.Builder(t, root), DataKey: p.Key, Alerts: p.Alerts},
		Function: golambda.Props{Entry: "fn/consumidor", Timeout: awscdk.Duration_Seconds(jsii.Number(40))},
		Queue:    queues.QueueProps{MaxReceiveCount: 5}, MaximumConcurrency: 3, BatchConcurrency: 4, DefersMessages: true,
	})
	c.AddHTTPDependency("Almacen", queues.HTTPDependency{Name: "almacen", Prefix: "ALMACEN", URL: "https://almacen.example", Issuer: "the warehouse"})
	store := &recordingStore{}
	c.AddBreaker(store, "almacen", "orders wait.")
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(store.bound) != 1 || fmt.Sprint(store.dependencies) != "[almacen]" {
		t.Fatalf("the breaker store bound %d functions for %v, want 1 for almacen", len(store.bound), store.dependencies)
	}
	tpl := assertions.Template_FromStack(p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"ReservedConcurrentExecutions": 3, "Timeout": 40,
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			"ENTORNO": "dev", "BATCH_CONCURRENCY": "4", "MAX_RECEIVE_COUNT": "5", "AWS_MAX_ATTEMPTS": "2",
			"ALMACEN_URL": "https://almacen.example", "ALMACEN_MAX_ATTEMPTS": "2", "ALMACEN_READ_TIMEOUT": "30s",
			"ALMACEN_SECRET_ARN": assertions.Match_AnyValue(), "DLQ_URLS": assertions.Match_AnyValue(),
		})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"ScalingConfig": map[string]any{"MaximumConcurrency": 3}, "FunctionResponseTypes": []any{"ReportBatchItemFailures"},
	})
	// Visibility derived from the timeout: 6 x 40 s.
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{"VisibilityTimeout": 240, "RedrivePolicy": assertions.Match_ObjectLike(&map[string]any{"maxReceiveCount": 5})})
	tpl.HasResourceProperties(jsii.String("AWS::SecretsManager::Secret"), map[string]any{"KmsKeyId": assertions.Match_AnyValue()})
	tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
		"MetricName": "CircuitoAbierto", "Namespace": "MercadoFresco/Tienda", "Threshold": 0,
		"Dimensions": assertions.Match_ArrayWith(&[]any{map[string]any{"Name": "Dependencia", "Value": "almacen"}}),
	})
}

func TestEveryProblemIsReported(t *testing.T) {
	p := cdktest.NewPlatform("Mal")
	root, _ := filepath.Abs("testdata/fixture")
	c := queues.NewConsumer(p.Stack, "Consumidor", &queues.ConsumerProps{Context: core.Context{Builder: golambdatest.Builder(t, root)}, MaximumConcurrency: 1, BatchConcurrency: 500})
	c.AddHTTPDependency("Dep", queues.HTTPDependency{Name: "dep", Prefix: "dep", URL: "http://x", MaxAttempts: 50})
	c.AddBreaker(nil, "dep", "x")
	errs := cdktest.Errors(p.Stack)
	for _, want := range []string{"Entry is required", "EnvironmentName is required", "MaximumConcurrency must be an integer", "BatchConcurrency must be", "DataKey is required",
		"must be an https URL", "upper-case Prefix", "MaxAttempts must be", "the breaker store"} {
		cdktest.RequireContains(t, errs, want)
	}
}

// TestDeferringConsumerMaySendToItsOwnQueue: a consumer that defers
// messages sends the last receive's delayed copy to its own standard queue
// (sqsconsumer.Plan), so it is granted sqs:SendMessage there and admitted
// by the queue's producer guard; one that does not defer (or reads a FIFO
// queue, which defers by visibility only) may not send there. The on-call
// role, when given, is admitted to the queue for the redrive.
func TestDeferringConsumerMaySendToItsOwnQueue(t *testing.T) {
	for _, tc := range []struct {
		name         string
		defers, fifo bool
		wantSend     bool
	}{
		{"defers", true, false, true},
		{"does not defer", false, false, false},
		{"defers on a FIFO queue", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cdktest.NewPlatform("Cola")
			root, _ := filepath.Abs("testdata/fixture")
			c := queues.NewConsumer(p.Stack, "Consumidor", &queues.ConsumerProps{
				Context:            core.Context{EnvironmentName: "dev", Builder: golambdatest.Builder(t, root), DataKey: p.Key, Alerts: p.Alerts},
				Function:           golambda.Props{Entry: "fn/consumidor"},
				Queue:              queues.QueueProps{Fifo: tc.fifo},
				MaximumConcurrency: 2, DefersMessages: tc.defers,
				OperatorRoleArn: "arn:aws:iam::" + cdktest.Account + ":role/guardia",
			})
			if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			tpl := assertions.Template_FromStack(p.Stack, nil)
			queueArn := map[string]any{"Fn::GetAtt": []any{*p.Stack.GetLogicalId(c.Queue.Queue.Node().DefaultChild().(awscdk.CfnElement)), "Arn"}}
			sends := false
			for _, pol := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
				raw, _ := json.Marshal(pol)
				var doc struct {
					Properties struct {
						PolicyDocument struct{ Statement []map[string]any }
					}
				}
				_ = json.Unmarshal(raw, &doc)
				for _, st := range doc.Properties.PolicyDocument.Statement {
					a, _ := json.Marshal(st["Action"])
					r, _ := json.Marshal(st["Resource"])
					q, _ := json.Marshal(queueArn)
					if strings.Contains(string(a), "sqs:SendMessage") && string(r) == string(q) {
						sends = true
					}
				}
			}
			if sends != tc.wantSend {
				t.Errorf("sqs:SendMessage on its own queue granted = %v, want %v", sends, tc.wantSend)
			}
			policy, _ := json.Marshal(tpl.FindResources(jsii.String("AWS::SQS::QueuePolicy"), nil))
			if !strings.Contains(string(policy), "role/guardia") {
				t.Error("the on-call role is not admitted to the queue")
			}
		})
	}
}

// A replay window must cover the queue's longest legitimate pass, computed
// from the synthesised retentions: SNS's 23 days of delivery retries + the
// DLQ's 14 days (counted from the enqueue into the source) + the source's 4
// days after one redrive + the deferral copies (72 × 5 receives × 300 s =
// 1.25 days, in each of the two residencies) = 43.5 days. Shorter fails
// synth naming the numbers; the function gets the window it was given.
func TestReplayWindowMustCoverTheLongestPass(t *testing.T) {
	root, _ := filepath.Abs("testdata/fixture")
	days := func(n float64) awscdk.Duration { return awscdk.Duration_Days(jsii.Number(n)) }
	for _, tc := range []struct {
		name             string
		window, upstream awscdk.Duration
		defers           bool
		wantErr          []string // substrings of the one error; nil: none
		wantEnv          string
	}{
		{"the fan-out consumers' 45 days", days(45), days(23), true, nil, "1080h"},
		{"21 days against SNS's retries", days(21), days(23), true, []string{"(21 days)", "= 43.5 days", "23 days before reaching the queue", "14 days in the DLQ", "4 days in the source after one redrive", "2.5 days of deferral copies"}, ""},
		{"21 days without upstream nor deferrals", days(21), nil, false, nil, "504h"},
		{"17 days without upstream nor deferrals", days(17), nil, false, []string{"(17 days)", "= 18 days"}, ""},
		{"a window shorter than a re-admission", awscdk.Duration_Hours(jsii.Number(12)), nil, false, []string{"shorter than a re-admission"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cdktest.NewPlatform("Ventana")
			c := queues.NewConsumer(p.Stack, "Consumidor", &queues.ConsumerProps{
				Context:            core.Context{EnvironmentName: "dev", Builder: golambdatest.Builder(t, root), DataKey: p.Key, Alerts: p.Alerts},
				Function:           golambda.Props{Entry: "fn/consumidor"},
				Queue:              queues.QueueProps{MaxReceiveCount: 5},
				MaximumConcurrency: 2, DefersMessages: tc.defers,
				IdempotencyWindow: tc.window, UpstreamMaxAge: tc.upstream,
			})
			errs := cdktest.Errors(p.Stack)
			if tc.wantErr == nil {
				if len(errs) > 0 {
					t.Fatalf("errors: %v (pass %s)", errs, c.LongestPass)
				}
				assertions.Template_FromStack(p.Stack, nil).HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
					"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"IDEMPOTENCY_WINDOW": tc.wantEnv})},
				})
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got %v", errs)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(errs[0], w) {
					t.Errorf("the error does not say %q: %s", w, errs[0])
				}
			}
		})
	}
}
