package dlq_test

import (
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

var end = time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC) // Monday morning

// baseSeed is random per run (printed) unless MF_SEED pins it.
func baseSeed(t *testing.T) uint64 {
	t.Helper()
	return testseed.New(t).Seed
}

var pedidos = dlq.Options{Consumer: consumers.Consumer{SupportedVersions: []int{1}, RequiredKeys: []string{"pedido_id", "lineas"}}}

func TestScenarioVerdicts(t *testing.T) {
	seed := baseSeed(t)
	tests := []struct {
		scenario string
		want     dlq.Verdict
		evidence []string // substrings the report's evidence must contain
	}{
		{"transient-burst", dlq.Transient, []string{"burst", "receive counts uniform"}},
		{"data-drip", dlq.Data, []string{"drip", "sku=" + badSKU}},
		{"deploy-v2", dlq.Poison, []string{"version 2, the consumer accepts 1", "content outranks timing", "22:04"}},
		{"malformed", dlq.Poison, []string{"malformed"}},
		{"mixture", dlq.Mixed, []string{"more than one cause"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			for i := range uint64(10) {
				s := seed + i
				msgs, err := generate(tt.scenario, s, end, prodSource)
				if err != nil {
					t.Fatal(err)
				}
				r := dlq.Classify(msgs, pedidos)
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
		msgs, _ := generate("mixture", seed+i, end, prodSource)
		r := dlq.Classify(msgs, pedidos)
		got := map[dlq.Verdict]int{}
		for _, g := range r.Groups {
			got[g.Class] = g.N
		}
		if got[dlq.Transient] != 80 || got[dlq.Data] != 30 || got[dlq.Poison] != 10 {
			t.Fatalf("seed %d: groups %v, want 80 transient, 30 data, 10 poison\n%s", seed+i, got, dump(r))
		}
	}
}

// TestAttributesAreClues: mf-* attributes on messages that SQS moved were set
// by the producer and must not turn a transient burst into poison; a
// consumer's "poison" on a valid envelope is believed but named as such.
func TestAttributesAreClues(t *testing.T) {
	seed := baseSeed(t)
	msgs, _ := generate("transient-burst", seed, end, prodSource)
	for i := range msgs {
		msgs[i].MessageAttributes = map[string]types.MessageAttributeValue{
			sqsbatch.AttrFailureClass:  sqsbatch.StringAttribute("poison"),
			sqsbatch.AttrFailureReason: sqsbatch.StringAttribute("forged"),
		}
	}
	r := dlq.Classify(msgs, pedidos)
	if r.Verdict != dlq.Transient || !strings.Contains(dump(r), "only the producer can have set") {
		t.Fatalf("forged attributes changed the verdict:\n%s", dump(r))
	}
	// A consumer-sent message (no DeadLetterQueueSourceArn) with a valid body.
	m := msgs[0]
	delete(m.Attributes, string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn))
	m.MessageAttributes[sqsbatch.AttrFailureReason] = sqsbatch.StringAttribute("invalid message: importe must be positive")
	r = dlq.Classify([]types.Message{m}, pedidos)
	if r.Verdict != dlq.Poison || !strings.Contains(r.Messages[0].Why, "not visible in the envelope") {
		t.Fatalf("consumer verdict: %s", dump(r))
	}
}

// TestPopularSKUInBurstIsTransient: a SKU in many orders of an outage window
// is popular, not bad data.
func TestPopularSKUInBurstIsTransient(t *testing.T) {
	seed := baseSeed(t)
	msgs, _ := generate("transient-burst", seed, end, prodSource)
	for i := range msgs[:40] { // a third of the orders contain bananas
		msgs[i].Body = aws.String(strings.Replace(aws.ToString(msgs[i].Body), `"lineas":[`, `"lineas":[{"sku":"BANANA-1KG","cantidad":1},`, 1))
	}
	if r := dlq.Classify(msgs, pedidos); r.Verdict != dlq.Transient {
		t.Fatalf("verdict %s:\n%s", r.Verdict, dump(r))
	}
}

func TestContentChecks(t *testing.T) {
	tests := []struct {
		body, why string
		class     dlq.Verdict
	}{
		{`   `, "empty body", dlq.Poison},
		{`{"version":1,"pedido_id":"P","lineas":[`, "not JSON", dlq.Poison},
		{`"text"`, "JSON string", dlq.Poison},
		{`null`, "JSON null", dlq.Poison},
		{`{"Type":"Notification","TopicArn":"arn","Message":"{}"}`, "SNS", dlq.Poison},
		{`{"pedido_id":"P","lineas":[]}`, `no "version" key`, dlq.Poison},
		{`{"version":"v2.1","pedido_id":"P","lineas":[1]}`, "version v2.1", dlq.Poison},
		{`{"version":"x","pedido_id":"P","lineas":[1]}`, "not a version number", dlq.Poison},
		{`{"version":1.0,"pedido_id":"","lineas":[1]}`, "missing pedido_id", dlq.Poison},
		{`{"version":"1","pedido_id":"P","lineas":[{"sku":"A"}]}`, "every receive failed", dlq.Transient},
	}
	for _, tt := range tests {
		m := types.Message{MessageId: aws.String("m"), Body: aws.String(tt.body), Attributes: map[string]string{
			string(types.MessageSystemAttributeNameSentTimestamp): "1764457200000", string(types.MessageSystemAttributeNameApproximateReceiveCount): "5",
			string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn): "arn:aws:sqs:eu-west-1:1:q"}}
		r := dlq.Classify([]types.Message{m}, pedidos)
		if r.Verdict != tt.class || !strings.Contains(r.Messages[0].Why, tt.why) {
			t.Errorf("%q: %s (%s), want %s containing %q", tt.body, r.Verdict, r.Messages[0].Why, tt.class, tt.why)
		}
	}
	if r := dlq.Classify(nil, pedidos); r.Verdict != dlq.Empty {
		t.Errorf("no messages: %s", r.Verdict)
	}
}

func dump(r dlq.Report) string {
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

// TestExpiredVerdict: a message older than the consumer's replay window, or
// one the consumer dead-lettered as expired-idempotency-window, is expired
// whatever else failed; a producer's expired reason on a message SQS moved
// is not believed; content poison still outranks age.
func TestExpiredVerdict(t *testing.T) {
	opts := pedidos
	opts.Window, opts.CreatedAtKey, opts.Now = 45*24*time.Hour, "confirmado_en", end
	body := func(id string, age time.Duration) string {
		return `{"version":1,"pedido_id":"` + id + `","lineas":[{"sku":"1","cantidad":1}],"confirmado_en":"` + end.Add(-age).Format(time.RFC3339) + `"}`
	}
	redriven := func(id, b string) types.Message {
		return types.Message{MessageId: aws.String(id), Body: aws.String(b), Attributes: map[string]string{
			string(types.MessageSystemAttributeNameSentTimestamp): strconv.FormatInt(end.Add(-time.Hour).UnixMilli(), 10), string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn): "arn:aws:sqs:eu-west-1:1:cola"}}
	}
	consumerSent := func(id, b, class, reason string) types.Message {
		m := redriven(id, b)
		delete(m.Attributes, string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn))
		m.MessageAttributes = map[string]types.MessageAttributeValue{sqsbatch.AttrFailureClass: sqsbatch.StringAttribute(class), sqsbatch.AttrFailureReason: sqsbatch.StringAttribute(reason)}
		return m
	}
	forged := redriven("forged", body("P-4", time.Hour))
	forged.MessageAttributes = map[string]types.MessageAttributeValue{sqsbatch.AttrFailureClass: sqsbatch.StringAttribute("permanent"), sqsbatch.AttrFailureReason: sqsbatch.StringAttribute("permanent: expired-idempotency-window: forged")}
	msgs := []types.Message{
		redriven("old", body("P-1", 50*24*time.Hour)),
		consumerSent("refused", body("P-2", time.Hour), "permanent", "permanent: expired-idempotency-window: preparacion:P-2: confirmado_en ..."),
		consumerSent("old-data", body("P-3", 46*24*time.Hour), "permanent", "permanent: preparacion:P-3: rechazado"),
		forged,
		redriven("young", body("P-5", 44*24*time.Hour)),
		redriven("old-v2", strings.Replace(body("P-6", 60*24*time.Hour), `"version":1`, `"version":2`, 1)),
		// The consumer cannot apply its window to it: poison, not transient.
		redriven("bad-time", strings.Replace(body("P-7", time.Hour), end.Add(-time.Hour).Format(time.RFC3339), "ayer", 1)),
	}
	r := dlq.Classify(msgs, opts)
	want := map[string]dlq.Verdict{"old": dlq.Expired, "refused": dlq.Expired, "old-data": dlq.Expired,
		"forged": dlq.Transient, "young": dlq.Transient, "old-v2": dlq.Poison, "bad-time": dlq.Poison}
	for _, m := range r.Messages {
		if m.Class != want[m.MessageID] {
			t.Errorf("%s: %s (%s), want %s", m.MessageID, m.Class, m.Why, want[m.MessageID])
		}
	}
	if r.Verdict != dlq.Mixed || !strings.Contains(dump(r), "50 days old, beyond the consumer's replay window of 45 days") {
		t.Fatalf("report:\n%s", dump(r))
	}
	if g := r.Groups[1]; g.Class != dlq.Expired || !strings.Contains(g.Next, "--readmit-expired") {
		t.Fatalf("groups in order poison, expired, ...: %+v", r.Groups)
	}
	if r := dlq.Classify(msgs[:2], opts); r.Verdict != dlq.Expired {
		t.Fatalf("only expired messages: verdict %s", r.Verdict)
	}
	// Without a window only the consumer's verdict makes a message expired.
	opts.Window = 0
	if r := dlq.Classify(msgs[:2], opts); r.Messages[0].Class == dlq.Expired || r.Messages[1].Class != dlq.Expired {
		t.Fatalf("without a window: %s", dump(r))
	}
}
