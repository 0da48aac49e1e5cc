package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// emf decodes every EMF line of buf: the values by metric name, and the
// dimension sets each line declares.
func emf(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		aws, _ := doc["_aws"].(map[string]any)
		cw, _ := aws["CloudWatchMetrics"].([]any)
		if len(cw) != 1 || fmt.Sprint(cw[0].(map[string]any)["Dimensions"]) != "[[Entorno]]" || doc["Entorno"] != "prod" {
			t.Fatalf("objective records carry the environment only: %s", line)
		}
		out = append(out, doc)
	}
	return out
}

func attrs(sent, firstReceive time.Time, receives int) map[string]string {
	return map[string]string{
		AttrSentTimestamp:         strconv.FormatInt(sent.UnixMilli(), 10),
		AttrFirstReceiveTimestamp: strconv.FormatInt(firstReceive.UnixMilli(), 10),
		AttrReceiveCount:          strconv.Itoa(receives),
	}
}

func TestQueueWaitsCountsFirstReceivesAndTheLateOnes(t *testing.T) {
	t.Parallel()
	sent := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := lambdaapi.SLOQueueWait
	for _, tc := range []struct {
		name                   string
		batch                  []map[string]string
		received, late, oldest float64
		none                   bool
	}{
		{name: "fresh", batch: []map[string]string{attrs(sent, sent.Add(300*time.Millisecond), 1)}, received: 1, oldest: 0.3},
		{name: "exactly M is on time", batch: []map[string]string{attrs(sent, sent.Add(m), 1)}, received: 1, oldest: m.Seconds()},
		{name: "over M", batch: []map[string]string{attrs(sent, sent.Add(m+time.Second), 1), attrs(sent, sent.Add(time.Second), 1)}, received: 2, late: 1, oldest: m.Seconds() + 1},
		{name: "a redelivery is not a wait", batch: []map[string]string{attrs(sent, sent.Add(2*m), 3), attrs(sent, sent.Add(2*time.Second), 1)}, received: 1, oldest: 2},
		{name: "only redeliveries write nothing", batch: []map[string]string{attrs(sent, sent.Add(2*m), 2)}, none: true},
		{name: "missing attributes are skipped", batch: []map[string]string{{AttrReceiveCount: "1"}, attrs(sent, sent.Add(time.Second), 1)}, received: 1, oldest: 1},
		{name: "clock skew is no negative wait", batch: []map[string]string{attrs(sent, sent.Add(-time.Second), 1)}, received: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := QueueWaits(ForEnvironment(&buf, "prod"), tc.batch...); err != nil {
				t.Fatal(err)
			}
			docs := emf(t, &buf)
			if tc.none {
				if len(docs) != 0 {
					t.Fatalf("wrote %v", docs)
				}
				return
			}
			if len(docs) != 1 {
				t.Fatalf("%d records, want 1", len(docs))
			}
			d := docs[0]
			if d[lambdaapi.MetricMessagesReceived] != tc.received || d[lambdaapi.MetricMessagesLate] != tc.late || d[lambdaapi.MetricQueueWaitSeconds] != tc.oldest {
				t.Errorf("record %v, want received %v late %v oldest %v", d, tc.received, tc.late, tc.oldest)
			}
		})
	}
}

func TestConfirmationsMeasureCommitToConfirmation(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := lambdaapi.SLOConfirmation
	body := func(confirmed time.Time) string {
		return fmt.Sprintf(`{"pedido_id":"P-1","creado_en":%q,"confirmado_en":%q}`, created.Format(time.RFC3339Nano), confirmed.Format(time.RFC3339Nano))
	}
	first := attrs(created, created, 1)
	for _, tc := range []struct {
		name    string
		bodies  []string
		attrs   []map[string]string
		late    []float64
		seconds []float64
	}{
		{name: "on time", bodies: []string{body(created.Add(1500 * time.Millisecond))}, attrs: []map[string]string{first}, late: []float64{0}, seconds: []float64{1.5}},
		{name: "exactly N is on time", bodies: []string{body(created.Add(n))}, attrs: []map[string]string{first}, late: []float64{0}, seconds: []float64{n.Seconds()}},
		{name: "late", bodies: []string{body(created.Add(n + time.Second))}, attrs: []map[string]string{first}, late: []float64{1}, seconds: []float64{n.Seconds() + 1}},
		{name: "a redelivery counts once", bodies: []string{body(created.Add(n + time.Second))}, attrs: []map[string]string{attrs(created, created, 2)}},
		{name: "without creado_en nothing is measured", bodies: []string{`{"pedido_id":"P-1","confirmado_en":"2026-12-01T10:00:00Z"}`, `not json`}, attrs: []map[string]string{first, first}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Confirmations(ForEnvironment(&buf, "prod"), tc.bodies, tc.attrs); err != nil {
				t.Fatal(err)
			}
			docs := emf(t, &buf)
			if len(docs) != len(tc.late) {
				t.Fatalf("%d records, want %d: %v", len(docs), len(tc.late), docs)
			}
			for i, d := range docs {
				if d[lambdaapi.MetricOrdersConfirmed] != 1.0 || d[lambdaapi.MetricOrdersConfirmedLate] != tc.late[i] || d[lambdaapi.MetricConfirmationSeconds] != tc.seconds[i] {
					t.Errorf("record %v, want late %v after %v s", d, tc.late[i], tc.seconds[i])
				}
			}
		})
	}
}
