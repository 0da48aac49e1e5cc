package catalog_test

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/synthesized"
)

// The recipes of docs/CONVENTIONS.md, checked on the committed snapshots
// (no synthesis): a step left out fails here and names the recipe.

const snapshotDir = "../../test/testdata/snapshots"

// templates reads the snapshots of env, by stack name.
func templates(t *testing.T, env string) map[string]map[string]any {
	t.Helper()
	app, err := synthesized.LoadEnv(snapshotDir, env)
	if err != nil {
		t.Fatalf("%v: run make snapshots (docs/CONVENTIONS.md#recipe-add-an-environment)", err)
	}
	out := map[string]map[string]any{}
	for name, s := range app.Stacks {
		out[name] = s.Template
	}
	return out
}

type resource struct {
	stack, id, typ string
	props          map[string]any
}

func each(tpls map[string]map[string]any, typ string) []resource {
	var out []resource
	for stack, tpl := range tpls {
		rs, _ := tpl["Resources"].(map[string]any)
		for id, r := range rs {
			m, _ := r.(map[string]any)
			if m["Type"] == typ {
				p, _ := m["Properties"].(map[string]any)
				out = append(out, resource{stack, id, typ, p})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].stack+out[i].id < out[j].stack+out[j].id })
	return out
}

// TestRecipeConsumer: every catalogue queue, DLQ and consumer function
// exists in every environment's snapshots; every queue an event source
// mapping reads is in the catalogue; the runbook names every logical name.
func TestRecipeConsumer(t *testing.T) {
	const recipe = "docs/CONVENTIONS.md#recipe-add-a-queue-consumer"
	runbook, err := os.ReadFile("../../docs/runbooks/dlq.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range catalog.Environments {
		tpls := templates(t, env)
		queues := map[string]resource{} // physical name -> queue
		for _, q := range each(tpls, "AWS::SQS::Queue") {
			if n, ok := q.props["QueueName"].(string); ok {
				queues[n] = q
			}
		}
		functions := map[string]bool{}
		for _, f := range each(tpls, "AWS::Lambda::Function") {
			if n, ok := f.props["FunctionName"].(string); ok {
				functions[n] = true
			}
		}
		for _, q := range catalog.Queues {
			for _, n := range []string{q.Name, q.DLQName} {
				if _, ok := queues[catalog.PhysicalName(n, env)]; !ok {
					t.Errorf("%s: catalogue queue %s (%s) is in no snapshot: construct it with the catalogue's names (%s)", env, catalog.PhysicalName(n, env), q.Logical, recipe)
				}
			}
			if !functions[catalog.PhysicalName(q.Function, env)] {
				t.Errorf("%s: catalogue consumer %s of %s is in no snapshot (%s)", env, catalog.PhysicalName(q.Function, env), q.Logical, recipe)
			}
		}
		// Every SQS event source mapping reads a catalogue queue.
		byID := map[string]string{}
		for n, q := range queues {
			byID[q.stack+"/"+q.id] = n
		}
		matched := 0
		for _, m := range each(tpls, "AWS::Lambda::EventSourceMapping") {
			raw, _ := json.Marshal(m.props["EventSourceArn"])
			var name string
			for key, n := range byID {
				stack, id, _ := strings.Cut(key, "/")
				if stack == m.stack && strings.Contains(string(raw), `"`+id+`"`) {
					name = n
				}
			}
			if name == "" {
				continue // not an SQS queue of this stack (a stream, an import)
			}
			matched++
			if _, _, _, ok := catalog.FindPhysical(name); !ok {
				t.Errorf("%s: %s reads %s, which config/catalog does not list: mf-dlq -e cannot name it and the stack should take its name from the catalogue (%s)", env, m.id, name, recipe)
			}
		}
		if matched < len(catalog.Queues) {
			t.Errorf("%s: only %d event source mappings read a queue of their stack, want at least %d (one per catalogue queue)", env, matched, len(catalog.Queues))
		}
	}
	for _, q := range catalog.Queues {
		if !strings.Contains(string(runbook), "`"+q.Logical+"`") {
			t.Errorf("docs/runbooks/dlq.md does not name the logical queue `%s` (%s)", q.Logical, recipe)
		}
	}
}

// TestRecipeAlarm: every alarm in the snapshots was made the project's
// way: a description, ALARM and OK actions, a stated TreatMissingData.
func TestRecipeAlarm(t *testing.T) {
	const recipe = "docs/CONVENTIONS.md#recipe-add-an-alarm"
	for _, env := range catalog.Environments {
		for _, a := range each(templates(t, env), "AWS::CloudWatch::Alarm") {
			var missing []string
			if d := a.props["AlarmDescription"]; d == nil || d == "" {
				missing = append(missing, "AlarmDescription")
			}
			for _, k := range []string{"AlarmActions", "OKActions"} {
				if l, _ := a.props[k].([]any); len(l) == 0 {
					missing = append(missing, k)
				}
			}
			if _, ok := a.props["TreatMissingData"]; !ok {
				missing = append(missing, "TreatMissingData")
			}
			if len(missing) > 0 {
				t.Errorf("%s: alarm %s/%s lacks %s: make it with observability.NewAlarm (%s)", env, a.stack, a.id, strings.Join(missing, ", "), recipe)
			}
		}
	}
}
