package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// scenario prepares a key (untimed, uncounted) and then delivers one message
// for it (counted).
type scenario struct {
	name    string
	target  int64 // -1: no target, reported only
	cache   bool
	prepare func(t testing.TB, e *env, key string)
	deliver func(t testing.TB, e *env, key string)
}

func okFn(v string) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return v, nil }
}

func mustDo(t testing.TB, e *env, key string, fn func(context.Context) (string, error), want error) {
	t.Helper()
	if _, err := Do(context.Background(), e.store, key, fn); !errors.Is(err, want) {
		t.Fatalf("Do(%q): %v, want %v", key, err, want)
	}
}

var errTransient = errors.New("gateway 503")

var scenarios = []scenario{
	{name: "first delivery (success)", target: 2,
		prepare: func(testing.TB, *env, string) {},
		deliver: func(t testing.TB, e *env, k string) { mustDo(t, e, k, okFn("ch"), nil) }},
	{name: "duplicate of COMPLETADO", target: 1,
		prepare: func(t testing.TB, e *env, k string) { mustDo(t, e, k, okFn("ch"), nil) },
		deliver: func(t testing.TB, e *env, k string) { mustDo(t, e, k, okFn("other"), nil) }},
	{name: "duplicate of COMPLETADO, cache on", target: 0, cache: true,
		prepare: func(t testing.TB, e *env, k string) { mustDo(t, e, k, okFn("ch"), nil) },
		deliver: func(t testing.TB, e *env, k string) { mustDo(t, e, k, okFn("other"), nil) }},
	{name: "duplicate of FALLIDO", target: 1,
		prepare: func(t testing.TB, e *env, k string) {
			mustDo(t, e, k, func(context.Context) (string, error) { return "", errTarjetaRechazada }, errTarjetaRechazada)
		},
		deliver: func(t testing.TB, e *env, k string) { mustDo(t, e, k, okFn("other"), errTarjetaRechazada) }},
	{name: "first delivery, transient failure (release)", target: -1,
		prepare: func(testing.TB, *env, string) {},
		deliver: func(t testing.TB, e *env, k string) {
			mustDo(t, e, k, func(context.Context) (string, error) { return "", errTransient }, errTransient)
		}},
	{name: "first delivery, permanent failure", target: -1,
		prepare: func(testing.TB, *env, string) {},
		deliver: func(t testing.TB, e *env, k string) {
			mustDo(t, e, k, func(context.Context) (string, error) { return "", errTarjetaRechazada }, errTarjetaRechazada)
		}},
}

type backend struct {
	name string
	env  func(testing.TB, func(*Config)) *env
}

var backends = []backend{
	{"DynamoDB (ALL_OLD returned)", newEnvAllOld},
	{"dynalite (GetItem fallback)", newEnv},
}

// measure returns the average calls per delivered message over n keys.
func measure(t testing.TB, b backend, sc scenario, n int) (float64, callCounts) {
	e := b.env(t, func(c *Config) {
		if sc.cache {
			c.CacheSize = 1024
		}
	})
	keys := make([]string, n)
	for i := range keys {
		keys[i], _ = KeyCobro(fmt.Sprintf("PED-%d", i))
		sc.prepare(t, e, keys[i])
	}
	before := e.calls.snapshot()
	for _, k := range keys {
		sc.deliver(t, e, k)
	}
	d := e.calls.since(before)
	return float64(d.Total()) / float64(n), callCounts{Get: d.Get / int64(n), Put: d.Put / int64(n), Update: d.Update / int64(n), Delete: d.Delete / int64(n)}
}

// TestReportDynamoCalls prints DynamoDB calls per message and asserts the
// targets: 2 writes for a first delivery, 1 call for a duplicate, 0 with
// the cache. Against DynamoDB (which returns the old item on a failed
// condition) the targets hold; dynalite ignores ALL_OLD, so there a
// duplicate costs the fallback GetItem too. Run:
//
//	go test ./lambdas/idempotency -run TestReportDynamoCalls -v
func TestReportDynamoCalls(t *testing.T) {
	const n = 20
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nDynamoDB calls per message (average over %d messages)\n", n)
	fmt.Fprintf(&sb, "%-46s | %-6s | %-40s | %-40s\n", "scenario", "target", backends[0].name, backends[1].name)
	fmt.Fprintf(&sb, "%s\n", strings.Repeat("-", 46+6+40+40+9))
	for _, sc := range scenarios {
		cells := make([]string, len(backends))
		for i, b := range backends {
			avg, per := measure(t, b, sc, n)
			cells[i] = fmt.Sprintf("%.2f  %s", avg, per)
			want := sc.target
			if i == 1 && sc.target == 1 {
				want = 2 // the documented fallback: failed PutItem + consistent GetItem
			}
			if want >= 0 && avg != float64(want) {
				t.Errorf("%s on %s: %.2f calls per message, want %d", sc.name, b.name, avg, want)
			}
			if sc.target == 2 && i == 0 && (per.Put != 1 || per.Update != 1 || per.Get != 0) {
				t.Errorf("%s: want one PutItem and one UpdateItem (2 writes), got %s", sc.name, per)
			}
		}
		target := "-"
		if sc.target >= 0 {
			target = fmt.Sprint(sc.target)
		}
		fmt.Fprintf(&sb, "%-46s | %-6s | %-40s | %-40s\n", sc.name, target, cells[0], cells[1])
	}
	t.Log(sb.String())
}

// BenchmarkDo measures latency against local dynalite (so ns/op is a
// loopback figure, not a DynamoDB one) and reports DynamoDB calls per
// message as ddb-calls/op. Duplicate scenarios cycle over a fixed pool of
// prepared keys, so a fast (cached) path does not make the untimed
// preparation grow with b.N.
func BenchmarkDo(b *testing.B) {
	const pool = 64
	for _, be := range backends {
		for i, sc := range scenarios[:3] {
			duplicate := i > 0
			b.Run(be.name+"/"+sc.name, func(b *testing.B) {
				e := be.env(b, func(c *Config) {
					if sc.cache {
						c.CacheSize = pool
					}
				})
				n := b.N
				if duplicate {
					n = min(b.N, pool)
				}
				keys := make([]string, n)
				for i := range keys {
					keys[i], _ = KeyCobro(fmt.Sprintf("PED-%d", i))
					sc.prepare(b, e, keys[i])
				}
				before := e.calls.snapshot()
				b.ResetTimer()
				for i := range b.N {
					sc.deliver(b, e, keys[i%len(keys)])
				}
				b.StopTimer()
				b.ReportMetric(float64(e.calls.since(before).Total())/float64(b.N), "ddb-calls/op")
			})
		}
	}
}
