package main

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/classify"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/dataset"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// TestSandboxReplay: a data set played in through SQS's mechanics looks, on
// the first receive from the DLQ, like the generated messages, and
// classifies the same.
func TestSandboxReplay(t *testing.T) {
	seed := testseed.New(t).Seed
	for scenario, want := range map[string]classify.Verdict{dataset.DeployV2: classify.Poison, dataset.Mixture: classify.Mixed} {
		clock := &offsetClock{}
		fake := localaws.NewSQS(localaws.SQSConfig{Now: clock.Now})
		d, _ := fake.CreateQueue("mercadofresco-pedidos-fallidos-dev", localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
		s, _ := fake.CreateQueue("cola-mercadofresco-pedidos-dev", localaws.QueueConfig{Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: fake.ARN(d), MaxReceiveCount: 4}})
		msgs, err := dataset.Generate(scenario, seed, time.Now().Add(-time.Minute), dataset.DefaultTopology)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := replay(ctx, fake, clock, s, d, msgs); err != nil {
			t.Fatal(err)
		}
		// Stopped: the tool's 5 s visibility cannot run out while a loaded
		// machine is slow to receive the messages.
		clock.stop(time.Now())
		tool := &dlq.Tool{SQS: fake, Clock: retry.SystemClock}
		tg, err := tool.Resolve(ctx, "Pedidos", "dev")
		if err != nil {
			t.Fatal(err)
		}
		r, err := tool.Classify(ctx, tg, dlq.ClassifyOptions{Options: dlq.ConsumerOptions(tg)})
		if err != nil || r.Verdict != want || r.Total != len(msgs) {
			t.Fatalf("%s: %s of %d messages (want %s of %d): %v", scenario, r.Verdict, r.Total, want, len(msgs), err)
		}
		redriven := 0
		for _, m := range r.Messages {
			if m.Origin == classify.OriginRedrive {
				redriven++
				// SQS moved it after maxReceiveCount (4) receives; the
				// classification's own receive is not counted.
				if m.ReceiveCount != 4 || m.DLQReceives != 1 {
					t.Fatalf("%s: a redriven message shows receive count %d (+%d in the DLQ) on its first DLQ receive, want 4 (+1)", scenario, m.ReceiveCount, m.DLQReceives)
				}
			}
		}
		generated := 0
		for _, m := range msgs {
			if m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] != "" {
				generated++
			}
		}
		if redriven != generated {
			t.Errorf("%s: %d redriven, generated %d", scenario, redriven, generated)
		}
	}
}
