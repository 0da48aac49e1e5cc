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
// definition the attempts rule cannot render (Fn::Sub with a variable map),
// so none of its retries can be counted.
func (f *fixture) unreadableStateMachine(id string) sfn.CfnStateMachine {
	fn := f.fn(id+"Fn", 10)
	role := awsiam.NewRole(f.stack, jsii.String(id+"Role"), &awsiam.RoleProps{AssumedBy: awsiam.NewServicePrincipal(jsii.String("states.amazonaws.com"), nil)})
	def := awscdk.Fn_Sub(jsii.String(`{"StartAt":"Cobrar","States":{"Cobrar":{"Type":"Task","Resource":"${Fn}","Retry":[{"ErrorEquals":["States.ALL"],"MaxAttempts":99}],"End":true}}}`),
		&map[string]*string{"Fn": fn.FunctionArn()})
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
	requireContains(t, errs, "Checks/Opaca", "cannot be counted", "Fn::Sub with a variable map")
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
