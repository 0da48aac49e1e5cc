package orderflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/golambdatest"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

// The starter: rule (retry policy, DLQ, alarms) → SQS buffer (DLQ) →
// iniciar-pedido with MaximumConcurrency, allowed to start this state
// machine only. With the workflow, cdk-nag and the checks pass.
func TestStarterWiring(t *testing.T) {
	// Lambda bundling off: the binary is not what this test checks.
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}}})
	stack := awscdk.NewStack(app, jsii.String("Flujo"), &awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String(cdktest.Account), Region: jsii.String(cdktest.Region)}})
	key := awskms.NewKey(stack, jsii.String("DataKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	alerts := awssns.NewTopic(stack, jsii.String("Alerts"), &awssns.TopicProps{MasterKey: key, EnforceSSL: jsii.Bool(true)})
	f := newFixtureOn(t, &cdktest.Platform{App: app, Stack: stack, Key: key, Alerts: alerts}, orderflow.WorkflowProps{})
	awscdk.Aspects_Of(f.p.App).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	cdktest.Check(f.p.App)
	bus := awsevents.NewEventBus(f.p.Stack, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: jsii.String("bus-mercadofresco")})
	builder := golambdatest.Builder(t, "")
	orderflow.NewStarter(f.p.Stack, "Inicio", &orderflow.StarterProps{
		Context: core.Context{Builder: builder, DataKey: f.p.Key, Alerts: f.p.Alerts},
		Bus:     bus, Workflow: f.wf, MaximumConcurrency: 5,
		QueueName: jsii.String("cola-mercadofresco-inicio-pedido"), RuleName: jsii.String("mf-pedido-creado-a-inicio"),
		FunctionName:     jsii.String("mf-iniciar-pedido"),
		ArchiveRetention: awscdk.Duration_Days(jsii.Number(60)),
	})
	tpl := assertions.Template_FromStack(f.p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"Name":         "mf-pedido-creado-a-inicio",
		"EventPattern": map[string]any{"source": []any{eventsapi.SourceTienda}, "detail-type": []any{eventsapi.TypePedidoCreado}},
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
			"RetryPolicy":      map[string]any{"MaximumRetryAttempts": 10, "MaximumEventAgeInSeconds": 7200},
			"DeadLetterConfig": map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^InicioPedidoCreadoDeadLetterQueue")), "Arn"}}},
		})},
	})
	// Both rule alarms, on this bus and rule.
	for _, metric := range []string{"FailedInvocations", "InvocationsSentToDlq"} {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"MetricName": metric, "Namespace": "AWS/Events", "Threshold": 0,
			"Dimensions": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"Name": "EventBusName"})}),
		})
	}
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"QueueName":     "cola-mercadofresco-inicio-pedido",
		"RedrivePolicy": assertions.Match_ObjectLike(&map[string]any{"maxReceiveCount": 4}),
		// 6 x the starter's 20 s timeout.
		"VisibilityTimeout": 120,
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), map[string]any{
		"ScalingConfig": map[string]any{"MaximumConcurrency": 5}, "FunctionResponseTypes": []any{"ReportBatchItemFailures"},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"FunctionName": "mf-iniciar-pedido",
		"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{
			"STATE_MACHINE_ARN": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^ProcesarStateMachine"))},
			"DLQ_URLS":          assertions.Match_AnyValue(),
			// eventsapi.StarterWindow: 89 days.
			"IDEMPOTENCY_WINDOW": "2136h",
			// The buffer's: a failed start comes back after a jitter of it.
			"VISIBILITY_TIMEOUT": "120s",
		})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{
			"Action": "states:StartExecution", "Resource": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^ProcesarStateMachine"))},
		})})},
	})
	// The rule's DLQ is encrypted and alarmed like every DLQ.
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"KmsMasterKeyId":     assertions.Match_AnyValue(),
		"RedriveAllowPolicy": map[string]any{"redrivePermission": "denyAll"},
	})
	// The fixture's stand-ins (inline functions, a plain FIFO queue) are
	// not under test: only the workflow's and the starter's findings count.
	var errs []string
	for _, m := range *assertions.Annotations_FromStack(f.p.Stack).FindError(jsii.String("*"), assertions.Match_AnyValue()) {
		if strings.HasPrefix(*m.Id, "/Flujo/Inicio") || strings.HasPrefix(*m.Id, "/Flujo/Procesar") {
			errs = append(errs, *m.Id+": "+fmt.Sprint(m.Entry.Data))
		}
	}
	for _, e := range cdktest.Findings(f.p.Stack) {
		if strings.Contains(e, " Flujo/Inicio") || strings.Contains(e, " Flujo/Procesar") {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		t.Fatalf("synthesis errors (cdk-nag, checks):\n%s", strings.Join(errs, "\n"))
	}
}

// The bus archive may keep events only as long as the starter's 89-day
// window covers a replayed event's longest pass: the archive's retention +
// the rule's 2 h maximum event age + the buffer's 14-day DLQ + 4 days after
// one redrive. 70 days (88.08 in all) passes; 71 (89.08) fails synth
// naming the numbers; 0 (forever) fails too.
func TestArchiveRetentionMustFitTheStarterWindow(t *testing.T) {
	for _, tc := range []struct {
		days float64
		want string // substring of the error; "" none
	}{
		{60, ""},
		{70, ""},
		{71, "= 89.08 days"},
		{0, "0 would keep events forever"},
		{1.5, "whole number of days"},
	} {
		t.Run(fmt.Sprint(tc.days), func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}}})
			stack := awscdk.NewStack(app, jsii.String("Archivo"), &awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String(cdktest.Account), Region: jsii.String(cdktest.Region)}})
			key := awskms.NewKey(stack, jsii.String("DataKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
			alerts := awssns.NewTopic(stack, jsii.String("Alerts"), &awssns.TopicProps{MasterKey: key})
			bus := awsevents.NewEventBus(stack, jsii.String("Bus"), nil)
			builder := golambdatest.Builder(t, "")
			orderflow.NewStarter(stack, "Inicio", &orderflow.StarterProps{
				Context: core.Context{Builder: builder, DataKey: key, Alerts: alerts},
				Bus:     bus, ArchiveRetention: awscdk.Duration_Days(jsii.Number(tc.days)),
			})
			var errs []string
			for _, e := range cdktest.Errors(stack) {
				if !strings.Contains(e, "Workflow is required") { // no workflow in this small stack
					errs = append(errs, e)
				}
			}
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Fatalf("errors: %v", errs)
			case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.want)):
				t.Fatalf("want one error saying %q, got %v", tc.want, errs)
			}
		})
	}
}
