package core_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/internal/cdktest"
)

// Every problem is reported, with the construct's kind and path; a bad
// value falls back to the default.
func TestProblemsReportEveryProblem(t *testing.T) {
	stack := cdktest.NewStack("S")
	v := core.Check(stack, "thing")
	core.Context{}.Require(v, core.EnvironmentName|core.DataKey|core.Alerts)
	cases := []struct {
		got, want float64
	}{
		{v.Count("Retries", 0, 3, 1, 10), 3},
		{v.Count("Retries", 4, 3, 1, 10), 4},
		{v.Count("Receives", 2.5, 3, 1, 10), 3},
		{v.Count("Ceiling", 11, 3, 1, 10), 3},
		{v.Seconds("Timeout", nil, 30, 1, 120), 30},
		{v.Seconds("Timeout", awscdk.Duration_Minutes(jsii.Number(1)), 30, 1, 120), 60},
		{v.Seconds("MaxAge", awscdk.Duration_Seconds(jsii.Number(30)), 7200, 60, 86400), 7200},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %v, want %v", i, c.got, c.want)
		}
	}
	if v.OK() {
		t.Fatal("OK() after problems")
	}
	errs := cdktest.Errors(stack)
	for _, want := range []string{
		"thing S: EnvironmentName is required", "thing S: DataKey is required", "thing S: Alerts is required",
		"Receives must be an integer in 1..10, got 2.5", "Ceiling must be an integer in 1..10, got 11",
		"MaxAge must be between 1 min and 24 h, got 30 s",
	} {
		cdktest.RequireContains(t, errs, want)
	}
	if len(errs) != 6 {
		t.Errorf("%d errors, want 6:\n%s", len(errs), strings.Join(errs, "\n"))
	}
}
