package lambdaapi_test

import (
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// At every instant some invocation is polling, with at least the overlap
// to spare for a slow start, and never more than Concurrency at once.
func TestAPublisherIsAlwaysPolling(t *testing.T) {
	overlap := lambdaapi.PublisherPollWindow - lambdaapi.PublisherPeriod
	if overlap < 10*time.Second {
		t.Fatalf("overlap %s leaves no room for a cold start", overlap)
	}
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for t0 := time.Duration(0); t0 < 10*time.Minute; t0 += 250 * time.Millisecond {
		at := base.Add(5*time.Minute + t0)
		polling, running := 0, 0
		for k := 0; k < 20; k++ {
			start := base.Add(time.Duration(k) * lambdaapi.PublisherPeriod)
			if !at.Before(start) && at.Before(start.Add(lambdaapi.PublisherPollWindow)) {
				polling++
			}
			if !at.Before(start) && at.Before(start.Add(lambdaapi.PublisherTimeout)) {
				running++
			}
		}
		if polling == 0 {
			t.Fatalf("no invocation polls at %s", at)
		}
		if running > lambdaapi.PublisherConcurrency {
			t.Fatalf("%d invocations run at %s, reserved concurrency is %d", running, at, lambdaapi.PublisherConcurrency)
		}
	}
}

func TestTimingsAreConsistent(t *testing.T) {
	if lambdaapi.PublisherTimeout != lambdaapi.PublisherPollWindow+lambdaapi.PublisherStopMargin {
		t.Fatal("Timeout must be PollWindow + StopMargin")
	}
	if lambdaapi.PublishTimeout >= lambdaapi.PublisherLease || lambdaapi.PublishTimeout >= lambdaapi.PublisherStopMargin {
		t.Fatal("PublishTimeout must end before the lease and within the stop margin")
	}
	if n := 2 * lambdaapi.DefaultOutboxEntryAttempts * lambdaapi.DefaultOutboxMaxClaims; n > 15 {
		t.Fatalf("%d attempts per event on EventBridge, more than 15", n)
	}
}
