package main

import (
	"context"
	"testing"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// TestSandboxLoad: a data set restored into the sandbox's DLQ looks, on the
// first receive from it, like the generated messages, and classifies the
// same.
func TestSandboxLoad(t *testing.T) {
	for scenario, want := range map[string]dlq.Verdict{"deploy-v2": dlq.Poison, "mixture": dlq.Mixed} {
		sb, err := newSandbox(scenario, "dev", "")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		tool := &dlq.Tool{SQS: sb.sqs, Clock: retry.SystemClock}
		tg, err := tool.Resolve(ctx, "Pedidos", "dev")
		if err != nil {
			t.Fatal(err)
		}
		r, err := tool.Classify(ctx, tg, 1000, dlq.ConsumerOptions(tg))
		if err != nil || r.Verdict != want || r.Total != sb.info.Messages {
			t.Fatalf("%s: %s of %d messages (want %s of %d): %v", scenario, r.Verdict, r.Total, want, sb.info.Messages, err)
		}
		redriven := 0
		for _, m := range r.Messages {
			if m.Origin == dlq.OriginRedrive {
				redriven++
				// SQS moved it after maxReceiveCount (4) receives; the
				// classification's own receive is not counted.
				if m.ReceiveCount != 4 || m.DLQReceives != 1 || m.Source != tg.Sources[0].ARN {
					t.Fatalf("%s: a redriven message shows receive count %d (+%d in the DLQ) from %s on its first DLQ receive, want 4 (+1) from %s", scenario, m.ReceiveCount, m.DLQReceives, m.Source, tg.Sources[0].ARN)
				}
			}
		}
		if redriven == 0 {
			t.Errorf("%s: no message shows SQS's redrive", scenario)
		}
	}
}
