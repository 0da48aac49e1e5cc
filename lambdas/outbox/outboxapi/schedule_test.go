package outboxapi_test

import (
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/outbox/outboxapi"
)

// At every instant some invocation is polling, with at least the overlap
// to spare for a slow start, and never more than Concurrency at once.
func TestAPublisherIsAlwaysPolling(t *testing.T) {
	overlap := outboxapi.PublisherPollWindow - outboxapi.PublisherPeriod
	if overlap < 10*time.Second {
		t.Fatalf("overlap %s leaves no room for a cold start", overlap)
	}
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for t0 := time.Duration(0); t0 < 10*time.Minute; t0 += 250 * time.Millisecond {
		at := base.Add(5*time.Minute + t0)
		polling, running := 0, 0
		for k := 0; k < 20; k++ {
			start := base.Add(time.Duration(k) * outboxapi.PublisherPeriod)
			if outboxapi.Polling(start, at) {
				polling++
			}
			if !at.Before(start) && at.Before(start.Add(outboxapi.PublisherTimeout)) {
				running++
			}
		}
		if polling == 0 {
			t.Fatalf("no invocation polls at %s", at)
		}
		if running > outboxapi.PublisherConcurrency {
			t.Fatalf("%d invocations run at %s, reserved concurrency is %d", running, at, outboxapi.PublisherConcurrency)
		}
	}
}

func TestTimingsAreConsistent(t *testing.T) {
	if outboxapi.PublisherTimeout != outboxapi.PublisherPollWindow+outboxapi.PublisherStopMargin {
		t.Fatal("Timeout must be PollWindow + StopMargin")
	}
	if outboxapi.PublishTimeout >= outboxapi.Lease || outboxapi.PublishTimeout >= outboxapi.PublisherStopMargin {
		t.Fatal("PublishTimeout must end before the lease and within the stop margin")
	}
	if n := 2 * outboxapi.DefaultEntryAttempts * outboxapi.DefaultMaxClaims; n > 15 {
		t.Fatalf("%d attempts per event on EventBridge, more than 15", n)
	}
}
