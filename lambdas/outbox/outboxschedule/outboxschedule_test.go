package outboxschedule_test

import (
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/internal/depcheck"
	"github.com/mercadofresco/integration/lambdas/outbox/outboxschedule"
)

func TestStdlibOnly(t *testing.T) {
	depcheck.StdlibOnly(t, "github.com/mercadofresco/integration/lambdas/outbox/outboxschedule")
}

// At every instant some invocation is polling, with at least the overlap
// to spare for a slow start, and never more than Concurrency at once.
func TestAPublisherIsAlwaysPolling(t *testing.T) {
	overlap := outboxschedule.PollWindow - outboxschedule.Period
	if overlap < 10*time.Second {
		t.Fatalf("overlap %s leaves no room for a cold start", overlap)
	}
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for t0 := time.Duration(0); t0 < 10*time.Minute; t0 += 250 * time.Millisecond {
		at := base.Add(5*time.Minute + t0)
		polling, running := 0, 0
		for k := 0; k < 20; k++ {
			start := base.Add(time.Duration(k) * outboxschedule.Period)
			if outboxschedule.Polling(start, at) {
				polling++
			}
			if !at.Before(start) && at.Before(start.Add(outboxschedule.Timeout)) {
				running++
			}
		}
		if polling == 0 {
			t.Fatalf("no invocation polls at %s", at)
		}
		if running > outboxschedule.Concurrency {
			t.Fatalf("%d invocations run at %s, reserved concurrency is %d", running, at, outboxschedule.Concurrency)
		}
	}
}

func TestTimingsAreConsistent(t *testing.T) {
	if outboxschedule.Timeout != outboxschedule.PollWindow+outboxschedule.StopMargin {
		t.Fatal("Timeout must be PollWindow + StopMargin")
	}
	if outboxschedule.PublishTimeout >= outboxschedule.Lease || outboxschedule.PublishTimeout >= outboxschedule.StopMargin {
		t.Fatal("PublishTimeout must end before the lease and within the stop margin")
	}
	if n := 2 * outboxschedule.DefaultEntryAttempts * outboxschedule.DefaultMaxClaims; n > 15 {
		t.Fatalf("%d attempts per event on EventBridge, more than 15", n)
	}
}
