package test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/config/catalog"
)

// The queue consumers across stacks, per environment: each finds its tables
// (imported from the Data stack) and its DLQ, holds only the DynamoDB item
// operations of its own table, and its event source mapping's ceiling is its
// reserved concurrency, within the environment's ceiling.
func TestConsumersAreWiredForExactlyOnceEffect(t *testing.T) {
	s := synthApp(t)
	idem := []string{"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	stock := []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	consumers := map[string]struct {
		table string // the variable naming its table
		ddb   []string
	}{
		"mf-preparar-pedido":     {"IDEMPOTENCY_TABLE_NAME", idem},
		"mf-correo-confirmacion": {"IDEMPOTENCY_TABLE_NAME", idem},
		"mf-aviso-erp":           {"IDEMPOTENCY_TABLE_NAME", idem},
		"mf-movimientos-stock":   {"STOCK_TABLE_NAME", stock},
	}
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			stack := *es.Messaging.StackName()
			policies := s.resources(t, stack, "AWS::IAM::Policy")
			mappings := s.resources(t, stack, "AWS::Lambda::EventSourceMapping")
			found := 0
			for id, fn := range s.resources(t, stack, "AWS::Lambda::Function") {
				props := fn["Properties"].(map[string]any)
				name, _ := props["FunctionName"].(string)
				want, ok := consumers[strings.TrimSuffix(name, catalog.Suffix(es.Env.Name))]
				if !ok {
					continue
				}
				found++
				env, _ := props["Environment"].(map[string]any)["Variables"].(map[string]any)
				for _, v := range []string{want.table, "DLQ_URLS", "BATCH_CONCURRENCY", "ENTORNO"} {
					if env[v] == nil {
						t.Errorf("%s lacks %s (has %v)", name, v, env)
					}
				}
				raw, _ := json.Marshal(env[want.table])
				if !strings.Contains(string(raw), "Fn::ImportValue") || !strings.Contains(string(raw), es.Env.StackName("Data")) {
					t.Errorf("%s: %s = %s, want an import from %s", name, want.table, raw, es.Env.StackName("Data"))
				}
				role := refOf(props["Role"])
				var ddb []string
				for _, pol := range policies {
					pp := pol["Properties"].(map[string]any)
					roles, _ := pp["Roles"].([]any)
					if !slices.ContainsFunc(roles, func(r any) bool { return refOf(r) == role }) {
						continue
					}
					for _, st := range pp["PolicyDocument"].(map[string]any)["Statement"].([]any) {
						for _, a := range asStrings(st.(map[string]any)["Action"]) {
							if strings.HasPrefix(a, "dynamodb:") {
								ddb = append(ddb, a)
							}
						}
					}
				}
				slices.Sort(ddb)
				if !slices.Equal(ddb, want.ddb) {
					t.Errorf("DynamoDB actions of %s: %v, want %v", name, ddb, want.ddb)
				}
				reserved, _ := props["ReservedConcurrentExecutions"].(float64)
				for _, esm := range mappings {
					mp := esm["Properties"].(map[string]any)
					if refOf(mp["FunctionName"]) != id {
						continue
					}
					got, _ := mp["ScalingConfig"].(map[string]any)["MaximumConcurrency"].(float64)
					if got < 2 || got != reserved || got > es.Env.MaxConsumerConcurrency {
						t.Errorf("%s: MaximumConcurrency %v, reserved %v, environment ceiling %v", name, got, reserved, es.Env.MaxConsumerConcurrency)
					}
					if fr := asStrings(mp["FunctionResponseTypes"]); len(fr) != 1 || fr[0] != "ReportBatchItemFailures" {
						t.Errorf("%s: FunctionResponseTypes = %v", name, fr)
					}
				}
			}
			if found != len(consumers) {
				t.Fatalf("found %d of the %d consumers in %s", found, len(consumers), stack)
			}
		})
	}
}

// refOf returns the logical id a {"Ref": id} or {"Fn::GetAtt": [id, attr]} names.
func refOf(v any) string {
	m, _ := v.(map[string]any)
	if id, ok := m["Ref"].(string); ok {
		return id
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) > 0 {
		id, _ := ga[0].(string)
		return id
	}
	return ""
}

func asStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
