package test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The order-preparation consumer across stacks, per environment: it finds
// its idempotency table and DLQ, may touch only the four item operations of
// that table, and its event source mapping carries the environment's
// backpressure ceiling.
func TestPrepararPedidoIsWiredForExactlyOnceEffect(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		t.Run(es.Env.Name, func(t *testing.T) {
			stack := *es.Messaging.StackName()
			var fnID string
			var env map[string]any
			for id, fn := range s.resources(t, stack, "AWS::Lambda::Function") {
				props := fn["Properties"].(map[string]any)
				if name, _ := props["FunctionName"].(string); name == es.Env.PhysicalName("mf-preparar-pedido") {
					fnID = id
					env, _ = props["Environment"].(map[string]any)["Variables"].(map[string]any)
				}
			}
			if fnID == "" {
				t.Fatalf("no preparar-pedido function in %s", stack)
			}
			for _, v := range []string{"IDEMPOTENCY_TABLE_NAME", "DLQ_URLS", "BATCH_CONCURRENCY"} {
				if env[v] == nil {
					t.Errorf("preparar-pedido lacks %s (has %v)", v, env)
				}
			}
			// The table name comes from the Data stack of the same environment.
			raw, _ := json.Marshal(env["IDEMPOTENCY_TABLE_NAME"])
			if !strings.Contains(string(raw), "Fn::ImportValue") || !strings.Contains(string(raw), es.Env.StackName("Data")) {
				t.Errorf("IDEMPOTENCY_TABLE_NAME = %s, want an import from %s", raw, es.Env.StackName("Data"))
			}

			// The only DynamoDB actions the consumer holds.
			var ddb []string
			for _, pol := range s.resources(t, stack, "AWS::IAM::Policy") {
				doc := pol["Properties"].(map[string]any)["PolicyDocument"].(map[string]any)
				for _, st := range doc["Statement"].([]any) {
					for _, a := range asStrings(st.(map[string]any)["Action"]) {
						if strings.HasPrefix(a, "dynamodb:") {
							ddb = append(ddb, a)
						}
					}
				}
			}
			if got := strings.Join(ddb, ","); got != "dynamodb:GetItem,dynamodb:PutItem,dynamodb:UpdateItem,dynamodb:DeleteItem" &&
				got != "dynamodb:DeleteItem,dynamodb:GetItem,dynamodb:PutItem,dynamodb:UpdateItem" {
				t.Errorf("DynamoDB actions in %s: %s", stack, got)
			}

			for _, esm := range s.resources(t, stack, "AWS::Lambda::EventSourceMapping") {
				props := esm["Properties"].(map[string]any)
				got := props["ScalingConfig"].(map[string]any)["MaximumConcurrency"]
				if got != es.Env.MaxConsumerConcurrency {
					t.Errorf("MaximumConcurrency = %v, want the environment's %v", got, es.Env.MaxConsumerConcurrency)
				}
				if fr := asStrings(props["FunctionResponseTypes"]); len(fr) != 1 || fr[0] != "ReportBatchItemFailures" {
					t.Errorf("FunctionResponseTypes = %v", fr)
				}
			}
		})
	}
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
