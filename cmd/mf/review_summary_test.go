package main

import (
	"bytes"
	"encoding/json"
	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/synthesized"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/cmd/mf/cost"
)

// snapshots reads the committed templates of env (what make review
// compares with), keyed by stack name.
func snapshots(t *testing.T, env string) map[string]map[string]any {
	t.Helper()
	app, err := synthesized.LoadEnv(filepath.Join("..", "..", "test", "testdata", "snapshots"), env)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for name, s := range app.Stacks {
		out[name] = s.Template
	}
	return out
}

func clone(t *testing.T, v map[string]map[string]any) map[string]map[string]any {
	t.Helper()
	raw, _ := json.Marshal(v)
	var out map[string]map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// resource is the template's resource of type typ in stack whose name
// property (QueueName, FunctionName, ...) is nameIs, or the first of the
// type when nameIs is "".
func resource(t *testing.T, tpls map[string]map[string]any, stack, typ, nameIs string) map[string]any {
	t.Helper()
	for _, r := range tpls[stack]["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ && (nameIs == "" || slices.Contains(slices.Collect(maps.Values(props(r))), any(nameIs))) {
			return r
		}
	}
	t.Fatalf("no %s %q in %s", typ, nameIs, stack)
	return nil
}

func props(r map[string]any) map[string]any { return r["Properties"].(map[string]any) }

// review renders what make review prints after the diffs: the state
// machine states and the summary, with the monthly cost delta computed by
// mf cost from both sets of templates.
func review(t *testing.T, env string, before, after map[string]map[string]any) (states, summary string) {
	t.Helper()
	cfg, err := config.Lookup(env)
	if err != nil {
		t.Fatal(err)
	}
	app := func(m map[string]map[string]any) *synthesized.App {
		a := synthesized.New(env, cfg.Account, cfg.Region)
		for k, v := range m {
			raw, _ := json.Marshal(v)
			if err := a.Add(k, raw); err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	u, err := cost.DefaultUsage()
	if err != nil {
		t.Fatal(err)
	}
	p, err := cost.DefaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	then, now := app(before), app(after)
	changes := diffApps(then, now)
	d, err := cost.CompareTemplates(then, now, u, p)
	if err != nil {
		t.Fatal(err)
	}
	var sb, ss bytes.Buffer
	writeStates(&sb, changes)
	writeSummary(&ss, env, changes, figures(changes, now), costLine(d), nil)
	return sb.String(), ss.String()
}

// TestSummaryOneLineChange: the change a one-line config edit makes (the
// charge state's TimeoutSeconds 165 → 210) gives a summary of at most 15
// lines naming the state machine, the state, its risk class and the
// guardrail figure it moves, and the state diffed as pretty JSON.
func TestSummaryOneLineChange(t *testing.T) {
	before := snapshots(t, "prod")
	after := clone(t, before)
	sm := resource(t, after, "MercadoFresco-OrderFlow-prod", "AWS::StepFunctions::StateMachine", "")
	parts := props(sm)["DefinitionString"].(map[string]any)["Fn::Join"].([]any)[1].([]any)
	first := parts[0].(string)
	if !strings.Contains(first, `"Type":"Task","TimeoutSeconds":165`) {
		t.Fatalf("the snapshot's first state no longer ends with TimeoutSeconds 165: %.200s", first)
	}
	parts[0] = strings.Replace(first, `"Type":"Task","TimeoutSeconds":165`, `"Type":"Task","TimeoutSeconds":210`, 1)

	states, summary := review(t, "prod", before, after)
	t.Logf("summary:\n%s", summary)
	if n := strings.Count(strings.TrimSpace(summary), "\n") + 1; n > 15 {
		t.Errorf("summary of %d lines, want at most 15", n)
	}
	for _, want := range []string{
		"1 resources changed in 1 stacks: MercadoFresco-OrderFlow-prod (1)",
		"RETRIES/TIMEOUTS", "AWS::StepFunctions::StateMachine", "state Cobrar TimeoutSeconds",
		"Cobrar TimeoutSeconds 165 → 210: worst-case time of one attempt", "s (mf-cobro's Timeout)",
		"monthly cost: unchanged", "function code: unchanged",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if strings.Contains(summary, "Number of stacks with differences") {
		t.Error("summary repeats cdk diff's counts")
	}
	for _, want := range []string{"[~] state Cobrar", "TimeoutSeconds before:\n        165\n", "TimeoutSeconds after:\n        210\n"} {
		if !strings.Contains(states, want) {
			t.Errorf("state diff lacks %q:\n%s", want, states)
		}
	}
}

// TestSummaryRiskyFirst: a replacement, an IAM change, a timeout and a
// plain change are listed in that order, with the guardrail figures of
// the queue and the function, and the cost delta of more memory.
func TestSummaryRiskyFirst(t *testing.T) {
	before := snapshots(t, "prod")
	after := clone(t, before)
	const msg = "MercadoFresco-Messaging-prod"
	q := resource(t, after, msg, "AWS::SQS::Queue", "cola-mercadofresco-correo-confirmacion")
	props(q)["QueueName"] = "cola-mercadofresco-correo-confirmacion-v2"
	pedidos := resource(t, after, msg, "AWS::SQS::Queue", "cola-mercadofresco-pedidos")
	props(pedidos)["VisibilityTimeout"] = props(pedidos)["VisibilityTimeout"].(float64) + 60
	fn := resource(t, after, msg, "AWS::Lambda::Function", "mf-preparar-pedido")
	props(fn)["MemorySize"] = 4096.0
	for id, r := range after[msg]["Resources"].(map[string]any) {
		if r := r.(map[string]any); r["Type"] == "AWS::IAM::Policy" {
			props(r)["PolicyName"] = id + "Renamed"
			break
		}
	}
	_, summary := review(t, "prod", before, after)
	t.Logf("summary:\n%s", summary)
	order := []string{"REPLACEMENT", "IAM", "RETRIES/TIMEOUTS", "other"}
	last := -1
	for _, r := range order {
		i := strings.Index(summary, "  "+r+" ")
		if i < 0 || i < last {
			t.Errorf("%s missing or out of order", r)
		}
		last = i
	}
	for _, want := range []string{
		"cola-mercadofresco-pedidos VisibilityTimeout", "must stay at least 6 × its consumer's timeout (MF-SQS-VISIBILITY); mf-preparar-pedido's timeout",
		"monthly cost: ", " → ",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if strings.Contains(summary, "monthly cost: unchanged") {
		t.Error("four times the memory did not move the cost")
	}
}

func TestSummaryNoChange(t *testing.T) {
	before := snapshots(t, "dev")
	_, summary := review(t, "dev", before, clone(t, before))
	if !strings.Contains(summary, "no stack changes") || strings.Count(summary, "\n") > 5 {
		t.Errorf("summary of no change:\n%s", summary)
	}
}

// A change to a bus's resource policy (its Policy property: the bus has
// no policy resource) is an IAM change; a queue's RedrivePolicy is not.
func TestRiskOfAPolicyProperty(t *testing.T) {
	for _, tc := range []struct {
		typ, path, want string
	}{
		{"AWS::Events::EventBus", "Policy.Statement", RiskIAM},
		{"AWS::Events::EventBus", "Description", RiskOther},
		{"AWS::SQS::Queue", "RedrivePolicy.maxReceiveCount", RiskRetries},
	} {
		if got := risk(Change{Kind: "~", Type: tc.typ, Props: []PropChange{{Path: tc.path}}}); got != tc.want {
			t.Errorf("%s %s: risk %s, want %s", tc.typ, tc.path, got, tc.want)
		}
	}
}
