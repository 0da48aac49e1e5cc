package guardrails_test

import (
	"strings"
	"testing"

	"github.com/mercadofresco/integration/synthesized"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awspipes"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	sfn "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	tasks "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctionstasks"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/guardrails"
)

func (f *fixture) fnEnv(id string, env map[string]*string) awslambda.Function {
	return awslambda.NewFunction(f.stack, jsii.String(id), &awslambda.FunctionProps{
		FunctionName: jsii.String(strings.ToLower(id)),
		Runtime:      awslambda.Runtime_NODEJS_22_X(),
		Handler:      jsii.String("index.handler"),
		Code:         awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
		Environment:  &env,
	})
}

// stormLayers builds the 80-call layering: an SQS queue with
// maxReceiveCount receives, consumed by a pipe that runs an express
// workflow synchronously (its failure returns the message to the queue),
// whose Task retries the charge function retries times, which calls the
// gateway with the SDK's sdk attempts.
func stormLayers(f *fixture, sdk, receives, retries string) {
	fn := f.fnEnv("Cobro", map[string]*string{"AWS_MAX_ATTEMPTS": jsii.String(sdk), "GATEWAY_MAX_ATTEMPTS": jsii.String(sdk)})
	dlq := awssqs.NewQueue(f.stack, jsii.String("PedidosDlq"), &awssqs.QueueProps{RetentionPeriod: awscdk.Duration_Days(jsii.Number(14))})
	q := awssqs.NewQueue(f.stack, jsii.String("Pedidos"), &awssqs.QueueProps{
		QueueName:       jsii.String("cola-mercadofresco-pedidos"),
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(cfnNum(receives))},
	})
	charge := tasks.NewLambdaInvoke(f.stack, jsii.String("Cobrar"), &tasks.LambdaInvokeProps{
		LambdaFunction: fn, PayloadResponseOnly: jsii.Bool(true), RetryOnServiceExceptions: jsii.Bool(false),
	})
	charge.AddRetry(&sfn.RetryProps{Errors: jsii.Strings("States.ALL"), MaxAttempts: jsii.Number(cfnNum(retries))})
	sm := sfn.NewStateMachine(f.stack, jsii.String("Flujo"), &sfn.StateMachineProps{
		StateMachineName: jsii.String("flujo-pedido"),
		StateMachineType: sfn.StateMachineType_EXPRESS,
		DefinitionBody:   sfn.DefinitionBody_FromChainable(charge),
	})
	role := awsiam.NewRole(f.stack, jsii.String("PipeRole"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("pipes.amazonaws.com"), nil)})
	awspipes.NewCfnPipe(f.stack, jsii.String("Pipe"), &awspipes.CfnPipeProps{
		Name: jsii.String("pipe-pedidos"), RoleArn: role.RoleArn(),
		Source: q.QueueArn(), Target: sm.StateMachineArn(),
		TargetParameters: &awspipes.CfnPipe_PipeTargetParametersProperty{
			StepFunctionStateMachineParameters: &awspipes.CfnPipe_PipeTargetStateMachineParametersProperty{InvocationType: jsii.String("REQUEST_RESPONSE")},
		},
	})
}

func cfnNum(s string) float64 {
	var n float64
	for _, r := range s {
		n = n*10 + float64(r-'0')
	}
	return n
}

// The 80-call layering: SDK 5 x receives 4 x workflow 4 = 80 calls per
// order. Synth fails, naming the path and each factor.
func TestEightyCallLayeringFailsSynth(t *testing.T) {
	f := newFixture()
	stormLayers(f, "5", "4", "3")
	errs := f.errorsFor(guardrails.RuleAttempts)
	for _, dep := range []string{`"gateway"`, `"aws"`} {
		cdktest_RequireContains(t, errs, dep, "80 attempts", "more than 15",
			"queue cola-mercadofresco-pedidos: maxReceiveCount 4 (×4)",
			"state machine flujo-pedido (×1)",
			"Retry MaxAttempts 3 + 1 (×4)",
			"function cobro: ")
	}
	cdktest_RequireContains(t, errs, "GATEWAY_MAX_ATTEMPTS=5 (×5)")
	cdktest_RequireContains(t, errs, "AWS_MAX_ATTEMPTS=5 (×5)")
}

// The fix (SDK 2, the queue a safety net, the workflow commands):
// 2 x 4 x 1 = 8 passes.
func TestTwoSDKAttemptsLayeringPasses(t *testing.T) {
	f := newFixture()
	stormLayers(f, "2", "4", "0")
	if errs := f.errorsFor(guardrails.RuleAttempts); len(errs) > 0 {
		t.Fatalf("unexpected: %v", errs)
	}
	// The worst path to the gateway is the one through the pipe.
	var worst guardrails.AttemptPath
	for _, p := range guardrails.Attempts(f.stack) {
		if p.Dependency == "gateway" && p.Total > worst.Total {
			worst = p
		}
	}
	if worst.Total != 8 || len(worst.Factors) != 4 || !strings.Contains(worst.Path(), "maxReceiveCount 4") {
		t.Fatalf("worst gateway path %s = %v, want the pipe's 4 x 1 x 2 = 8", worst.Path(), worst.Total)
	}
}

func TestRuleTargetWithoutRetryPolicy(t *testing.T) {
	f := newFixture()
	bus := awsevents.NewEventBus(f.stack, jsii.String("Bus"), nil)
	q := f.queueWithDLQ("Destino", 30)
	rule := awsevents.NewRule(f.stack, jsii.String("Regla"), &awsevents.RuleProps{EventBus: bus, EventPattern: &awsevents.EventPattern{Source: jsii.Strings("x")}})
	rule.AddTarget(awseventstargets.NewSqsQueue(q, nil))
	ok := awsevents.NewRule(f.stack, jsii.String("Buena"), &awsevents.RuleProps{EventBus: bus, EventPattern: &awsevents.EventPattern{Source: jsii.Strings("y")}})
	ok.AddTarget(awseventstargets.NewSqsQueue(q, &awseventstargets.SqsQueueProps{RetryAttempts: jsii.Number(10)}))
	errs := f.errorsFor(guardrails.RuleAttempts)
	if len(errs) != 1 {
		t.Fatalf("want one finding (the rule without a retry policy), got %v", errs)
	}
	cdktest_RequireContains(t, errs, "Checks/Regla/Resource", "186 attempts", "185 retries + 1 (×186)")
}

// A dependency whose attempts are counted per work item (the outbox row's
// claims) is not multiplied by invocation retries; an acknowledged one is
// reported as exempt with its reason.
func TestPerWorkItemAndAcknowledgement(t *testing.T) {
	f := newFixture()
	fn := f.fnEnv("Publicador", map[string]*string{"AWS_MAX_ATTEMPTS": jsii.String("2"), "OUTBOX_MAX_CLAIMS": jsii.String("3")})
	fn.Node().DefaultChild().(awscdk.CfnResource).AddMetadata(jsii.String(synthesized.MetadataDependencies), []any{
		map[string]any{"name": "events", "attemptsEnv": []any{"AWS_MAX_ATTEMPTS", "OUTBOX_MAX_CLAIMS"}, "perWorkItem": true},
	})
	awsevents.NewRule(f.stack, jsii.String("Cada"), &awsevents.RuleProps{
		Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(1))),
		Targets:  &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn, &awseventstargets.LambdaFunctionProps{RetryAttempts: jsii.Number(0)})},
	})
	noisy := f.fnEnv("Ruidosa", map[string]*string{"ERP_MAX_ATTEMPTS": jsii.String("20")})
	guardrails.Acknowledge(noisy, guardrails.RuleAttempts, "test: the ERP de-duplicates and rate-limits itself")
	byDep := map[string]guardrails.AttemptPath{}
	for _, p := range guardrails.Attempts(f.stack) {
		byDep[p.Dependency] = p
	}
	if p := byDep["events"]; p.Total != 6 {
		t.Fatalf("per work item: %s = %v, want 2 x 3 = 6 (not x the 3 asynchronous invocations)", p.Path(), p.Total)
	}
	if p := byDep["lambda:publicador"]; p.Total != 1 {
		t.Fatalf("rule delivery to the function: %s = %v", p.Path(), p.Total)
	}
	if errs := f.errorsFor(guardrails.RuleAttempts); len(errs) > 0 {
		t.Fatalf("acknowledged or bounded paths reported: %v", errs)
	}
}

func cdktest_RequireContains(t *testing.T, msgs []string, parts ...string) {
	t.Helper()
	requireContains(t, msgs, parts...)
}
