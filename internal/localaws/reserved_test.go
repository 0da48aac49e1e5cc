package localaws

import (
	"sync"
	"testing"
)

// Lambda's reserved concurrency: invocations beyond the limit are refused
// while the others run, and a slot given back admits the next one.
func TestReservedRefusesBeyondItsLimit(t *testing.T) {
	for _, tc := range []struct {
		limit, calls, admitted int64
	}{{10, 100, 10}, {50, 450, 50}, {0, 30, 30}} {
		r := &Reserved{Limit: tc.limit}
		var mu sync.Mutex
		var releases []func()
		var wg sync.WaitGroup
		for range tc.calls {
			wg.Go(func() {
				if release, ok := r.Enter(); ok {
					mu.Lock()
					releases = append(releases, release)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if int64(len(releases)) != tc.admitted || r.Peak() != tc.admitted || r.Throttled() != tc.calls-tc.admitted {
			t.Fatalf("limit %d: %d admitted (peak %d), %d throttled; want %d admitted", tc.limit, len(releases), r.Peak(), r.Throttled(), tc.admitted)
		}
		releases[0]()
		if release, ok := r.Enter(); !ok {
			t.Fatalf("limit %d: a freed slot refused the next invocation", tc.limit)
		} else {
			release()
		}
	}
}
