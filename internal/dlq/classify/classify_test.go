package classify_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/internal/dlq/classify"
	"github.com/mercadofresco/integration/internal/dlq/dataset"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/queue"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

var end = time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC) // Monday morning

// baseSeed is random per run (printed) unless MF_SEED pins it.
func baseSeed(t *testing.T) uint64 {
	t.Helper()
	return testseed.New(t).Seed
}

var pedidos = classify.Options{AcceptedVersions: []int{1}, RequiredKeys: []string{"pedido_id", "lineas"}}

func TestScenarioVerdicts(t *testing.T) {
	seed := baseSeed(t)
	tests := []struct {
		scenario string
		want     classify.Verdict
		evidence []string // substrings the report's evidence must contain
	}{
		{dataset.TransientBurst, classify.Transient, []string{"burst", "receive counts uniform"}},
		{dataset.DataDrip, classify.Data, []string{"drip", "sku=" + dataset.BadSKU}},
		{dataset.DeployV2, classify.Poison, []string{"version 2, the consumer accepts 1", "content outranks timing", "22:04"}},
		{dataset.Malformed, classify.Poison, []string{"malformed"}},
		{dataset.Mixture, classify.Mixed, []string{"more than one cause"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			for i := range uint64(10) {
				s := seed + i
				msgs, err := dataset.Generate(tt.scenario, s, end, dataset.DefaultTopology)
				if err != nil {
					t.Fatal(err)
				}
				r := classify.Classify(msgs, pedidos)
				if r.Verdict != tt.want {
					t.Fatalf("seed %d: verdict %s, want %s\n%s", s, r.Verdict, tt.want, dump(r))
				}
				text := dump(r)
				for _, e := range tt.evidence {
					if !strings.Contains(text, e) {
						t.Errorf("seed %d: evidence lacks %q:\n%s", s, e, text)
					}
				}
			}
		})
	}
}

// TestMixtureGroups: every message of the mixture lands in its own cause.
func TestMixtureGroups(t *testing.T) {
	seed := baseSeed(t)
	for i := range uint64(20) {
		msgs, _ := dataset.Generate(dataset.Mixture, seed+i, end, dataset.DefaultTopology)
		r := classify.Classify(msgs, pedidos)
		got := map[classify.Verdict]int{}
		for _, g := range r.Groups {
			got[g.Class] = g.N
		}
		if got[classify.Transient] != 80 || got[classify.Data] != 30 || got[classify.Poison] != 10 {
			t.Fatalf("seed %d: groups %v, want 80 transient, 30 data, 10 poison\n%s", seed+i, got, dump(r))
		}
	}
}

// TestAttributesAreClues: mf-* attributes on messages that SQS moved were set
// by the producer and must not turn a transient burst into poison; a
// consumer's "poison" on a valid envelope is believed but named as such.
func TestAttributesAreClues(t *testing.T) {
	seed := baseSeed(t)
	msgs, _ := dataset.Generate(dataset.TransientBurst, seed, end, dataset.DefaultTopology)
	for i := range msgs {
		msgs[i].MessageAttributes = map[string]queue.Attribute{
			sqsbatch.AttrFailureClass:  queue.StringAttribute("poison"),
			sqsbatch.AttrFailureReason: queue.StringAttribute("forged"),
		}
	}
	r := classify.Classify(msgs, pedidos)
	if r.Verdict != classify.Transient || !strings.Contains(dump(r), "only the producer can have set") {
		t.Fatalf("forged attributes changed the verdict:\n%s", dump(r))
	}
	// A consumer-sent message (no DeadLetterQueueSourceArn) with a valid body.
	m := msgs[0]
	delete(m.Attributes, queue.AttrDeadLetterQueueSourceArn)
	m.MessageAttributes[sqsbatch.AttrFailureReason] = queue.StringAttribute("invalid message: importe must be positive")
	r = classify.Classify([]queue.Message{m}, pedidos)
	if r.Verdict != classify.Poison || !strings.Contains(r.Messages[0].Why, "not visible in the envelope") {
		t.Fatalf("consumer verdict: %s", dump(r))
	}
}

// TestPopularSKUInBurstIsTransient: a SKU in many orders of an outage window
// is popular, not bad data.
func TestPopularSKUInBurstIsTransient(t *testing.T) {
	seed := baseSeed(t)
	msgs, _ := dataset.Generate(dataset.TransientBurst, seed, end, dataset.DefaultTopology)
	for i := range msgs[:40] { // a third of the orders contain bananas
		msgs[i].Body = strings.Replace(msgs[i].Body, `"lineas":[`, `"lineas":[{"sku":"BANANA-1KG","cantidad":1},`, 1)
	}
	if r := classify.Classify(msgs, pedidos); r.Verdict != classify.Transient {
		t.Fatalf("verdict %s:\n%s", r.Verdict, dump(r))
	}
}

func TestContentChecks(t *testing.T) {
	tests := []struct {
		body, why string
		class     classify.Verdict
	}{
		{`   `, "empty body", classify.Poison},
		{`{"version":1,"pedido_id":"P","lineas":[`, "not JSON", classify.Poison},
		{`"text"`, "JSON string", classify.Poison},
		{`null`, "JSON null", classify.Poison},
		{`{"Type":"Notification","TopicArn":"arn","Message":"{}"}`, "SNS", classify.Poison},
		{`{"pedido_id":"P","lineas":[]}`, `no "version" key`, classify.Poison},
		{`{"version":"v2.1","pedido_id":"P","lineas":[1]}`, "version v2.1", classify.Poison},
		{`{"version":"x","pedido_id":"P","lineas":[1]}`, "not a version number", classify.Poison},
		{`{"version":1.0,"pedido_id":"","lineas":[1]}`, "missing pedido_id", classify.Poison},
		{`{"version":"1","pedido_id":"P","lineas":[{"sku":"A"}]}`, "every receive failed", classify.Transient},
	}
	for _, tt := range tests {
		m := queue.Message{MessageID: "m", Body: tt.body, Attributes: map[string]string{
			queue.AttrSentTimestamp: "1764457200000", queue.AttrApproximateReceiveCount: "5",
			queue.AttrDeadLetterQueueSourceArn: "arn:aws:sqs:eu-west-1:1:q"}}
		r := classify.Classify([]queue.Message{m}, pedidos)
		if r.Verdict != tt.class || !strings.Contains(r.Messages[0].Why, tt.why) {
			t.Errorf("%q: %s (%s), want %s containing %q", tt.body, r.Verdict, r.Messages[0].Why, tt.class, tt.why)
		}
	}
	if r := classify.Classify(nil, pedidos); r.Verdict != classify.Empty {
		t.Errorf("no messages: %s", r.Verdict)
	}
}

func dump(r classify.Report) string {
	var b strings.Builder
	b.WriteString(string(r.Verdict) + "\n")
	for _, e := range r.Evidence {
		b.WriteString("  " + e + "\n")
	}
	for _, g := range r.Groups {
		b.WriteString(" " + string(g.Class) + " " + strconv.Itoa(g.N) + "\n")
		for _, e := range g.Evidence {
			b.WriteString("   " + e + "\n")
		}
	}
	return b.String()
}
