package queues_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
)

// The longest pass comes from the synthesised retentions: a standard
// queue's DLQ counts from the enqueue into the source (so the time there
// is inside it), a FIFO DLQ starts again; a redrive adds the source's
// retention once more; deferrals count twice (both residencies).
func TestLongestPass(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		name               string
		fifo               bool
		src, dlq           float64 // days; 0: the defaults (4, 14)
		upstream, deferral time.Duration
		want               time.Duration
	}{
		{"standard defaults", false, 0, 0, 0, 0, 18 * day},
		{"FIFO defaults", true, 0, 0, 0, 0, 22 * day},
		{"standard, set retentions, upstream and deferrals", false, 2, 7, 23 * day, day, 34 * day},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cdktest.NewPlatform("Pase")
			props := &queues.QueueProps{Fifo: tc.fifo, Context: core.Context{DataKey: p.Key, Alerts: p.Alerts}}
			if tc.src > 0 {
				props.RetentionPeriod = awscdk.Duration_Days(jsii.Number(tc.src))
				props.DeadLetterRetentionPeriod = awscdk.Duration_Days(jsii.Number(tc.dlq))
			}
			q := queues.NewQueue(p.Stack, "Cola", props)
			pass := q.LongestPass(tc.upstream, tc.deferral)
			if pass.Total() != tc.want {
				t.Fatalf("pass %s, want %s", pass, tc.want)
			}
			if err := pass.Covers(tc.want); err != nil {
				t.Fatalf("a window of exactly the pass: %v", err)
			}
			if err := pass.Covers(tc.want - time.Hour); err == nil || !strings.Contains(err.Error(), "does not cover") {
				t.Fatalf("a window an hour short: %v", err)
			}
		})
	}
}
