package guardrails_test

import (
	"math"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	sfn "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/guardrails"
)

// unreadableStateMachine is a valid CloudFormation state machine whose
// definition the attempts rule cannot render (an Fn::If on a condition
// that only CloudFormation evaluates), so none of its retries can be counted.
func (f *fixture) unreadableStateMachine(id string) sfn.CfnStateMachine {
	fn := f.fn(id+"Fn", 10)
	role := awsiam.NewRole(f.stack, jsii.String(id+"Role"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil)})
	body := awscdk.Fn_Sub(jsii.String(`{"StartAt":"Cobrar","States":{"Cobrar":{"Type":"Task","Resource":"${Fn}","Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":99}],"End":true}}}`),
		&map[string]*string{"Fn": fn.FunctionArn()})
	cond := awscdk.NewCfnCondition(f.stack, jsii.String(id+"Cond"), &awscdk.CfnConditionProps{
		Expression: awscdk.Fn_ConditionEquals(awscdk.Aws_REGION(), jsii.String("eu-west-1")),
	})
	def := awscdk.Token_AsString(awscdk.Fn_ConditionIf(cond.LogicalId(), body, body), nil)
	return sfn.NewCfnStateMachine(f.stack, jsii.String(id), &sfn.CfnStateMachineProps{RoleArn: role.RoleArn(), DefinitionString: def})
}

// A state machine the rule cannot read is an error, not a skipped path:
// its paths are reported as unbounded, and acknowledging the rule with a
// reason is the only way past it.
func TestUnreadableStateMachineFailsSynth(t *testing.T) {
	f := newFixture()
	f.unreadableStateMachine("Opaca")
	var found bool
	for _, p := range guardrails.Attempts(f.stack) {
		if p.Unreadable != "" {
			found = true
			if !math.IsInf(p.Total, 1) {
				t.Errorf("unreadable path %s counted as %v, want unbounded", p.Path(), p.Total)
			}
		}
	}
	if !found {
		t.Fatal("Attempts skipped the unreadable state machine instead of reporting it")
	}
	errs := f.errorsFor(guardrails.RuleAttempts)
	if len(errs) != 1 {
		t.Fatalf("want one MF-ATTEMPTS error on the unreadable state machine, got %v", errs)
	}
	requireContains(t, errs, "Checks/Opaca", "cannot be counted", "Fn::If")
	if w := f.messages("warning"); len(w) > 0 {
		t.Errorf("findings must be errors, not warnings: %v", w)
	}

	g := newFixture()
	sm := g.unreadableStateMachine("Reconocida")
	guardrails.Acknowledge(sm, guardrails.RuleAttempts, "test: the retries of this definition are reviewed by hand and bounded at 3")
	if errs := g.errorsFor(guardrails.RuleAttempts); len(errs) > 0 {
		t.Fatalf("an acknowledged unreadable state machine still fails: %v", errs)
	}
}

// A definition built with Fn::Sub and a variable map is read: its Retry
// is counted like any other.
func TestSubWithAVariableMapIsCounted(t *testing.T) {
	f := newFixture()
	fn := f.fn("SubFn", 10)
	role := awsiam.NewRole(f.stack, jsii.String("SubRole"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil)})
	def := awscdk.Fn_Sub(jsii.String(`{"StartAt":"Cobrar","States":{"Cobrar":{"Type":"Task","Resource":"${Fn}","Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":99}],"End":true}}}`),
		&map[string]*string{"Fn": fn.FunctionArn()})
	sfn.NewCfnStateMachine(f.stack, jsii.String("Sub"), &sfn.CfnStateMachineProps{RoleArn: role.RoleArn(), DefinitionString: def})
	var counted bool
	for _, p := range guardrails.Attempts(f.stack) {
		if p.Unreadable != "" {
			t.Errorf("unreadable: %s", p.Unreadable)
		}
		if p.Total >= 100 && !math.IsInf(p.Total, 1) {
			counted = true
		}
	}
	if !counted {
		t.Errorf("no path counts the 99 retries + 1 of the Sub-built definition: %v", guardrails.Attempts(f.stack))
	}
}
