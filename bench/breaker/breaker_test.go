// Package breaker_test measures the project's shared circuit breaker
// (lambdas/breaker) against sony/gobreaker/v2's DistributedCircuitBreaker on
// the same Redis, in the same run: calls per second (from ns/op), Redis
// round trips per call and failed calls, with 1 and 32 concurrent callers,
// each its own breaker instance, while the circuit is closed; a second pass
// gives the call -work of latency, to show what holding a lock during the
// call costs. gobreaker's store is its usual one: JSON state under a key, a
// SET NX PX 5000 lock released by a compare-and-delete script. Keys get a
// unique prefix and are deleted at the end; nothing is flushed.
//
//	cd bench && go test -run '^$' -bench . -benchtime 3s ./breaker -addr 127.0.0.1:6379
//
// TestRoundTrips (make test) checks the round trips per call the
// benchmark reports (docs/breaker-benchmark.md).
package breaker_test

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/breaker"
)

var (
	addr = flag.String("addr", "127.0.0.1:6379", "Redis (or Valkey) address of the benchmark")
	work = flag.Duration("work", 2*time.Millisecond, "latency of the protected call in the second pass (0 to skip)")
)

// counter is a go-redis hook counting round trips (a pipeline is one).
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// gbStore is gobreaker's SharedDataStore on go-redis.
type gbStore struct {
	rdb *redis.Client
	mu  sync.Mutex
	tok map[string]string
}

var errLocked = errors.New("locked")

var unlockScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func (s *gbStore) Lock(name string) error {
	t := rand.Text()
	ok, err := s.rdb.SetNX(context.Background(), name, t, 5*time.Second).Result()
	if err != nil {
		return err
	}
	if !ok {
		return errLocked
	}
	s.mu.Lock()
	s.tok[name] = t
	s.mu.Unlock()
	return nil
}

func (s *gbStore) Unlock(name string) error {
	s.mu.Lock()
	t := s.tok[name]
	s.mu.Unlock()
	return unlockScript.Run(context.Background(), s.rdb, []string{name}, t).Err()
}

func (s *gbStore) GetData(name string) ([]byte, error) {
	b, err := s.rdb.Get(context.Background(), name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

func (s *gbStore) SetData(name string, data []byte) error {
	return s.rdb.Set(context.Background(), name, data, time.Hour).Err()
}

// contender is one breaker under test: newCalls makes n instances of the
// breaker named name, its keys starting with prefix, and returns the call
// of instance i, the protected call taking work.
type contender struct {
	name     string
	newCalls func(tb testing.TB, rdb *redis.Client, prefix, name string, n int, work time.Duration) func(i int) error
}

var contenders = []contender{
	{"lambdas-breaker", func(tb testing.TB, rdb *redis.Client, prefix, name string, n int, work time.Duration) func(i int) error {
		store := breaker.NewRedisStore(rdb)
		bs := make([]*breaker.Breaker, n)
		for i := range bs {
			b, err := breaker.New(store, breaker.Config{Name: name, KeyPrefix: prefix})
			if err != nil {
				tb.Fatal(err)
			}
			bs[i] = b
		}
		// Load the scripts first (EVALSHA falls back to EVAL once per server).
		_ = bs[0].Do(context.Background(), func(context.Context) error { return errors.New("warm-up") })
		_ = bs[0].Do(context.Background(), func(context.Context) error { return nil })
		return func(i int) error {
			return bs[i].Do(context.Background(), func(context.Context) error { return protected(work) })
		}
	}},
	{"sony-gobreaker-v2", func(tb testing.TB, rdb *redis.Client, prefix, name string, n int, work time.Duration) func(i int) error {
		bs := make([]*gobreaker.DistributedCircuitBreaker[struct{}], n)
		for i := range bs {
			b, err := gobreaker.NewDistributedCircuitBreaker[struct{}](&gbStore{rdb: rdb, tok: map[string]string{}}, gobreaker.Settings{
				Name:        prefix + name,
				MaxRequests: 1,
				Timeout:     30 * time.Second,
				ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 20 },
			})
			if err != nil {
				tb.Fatal(err)
			}
			bs[i] = b
		}
		return func(i int) error {
			_, err := bs[i].Execute(func() (struct{}, error) { return struct{}{}, protected(work) })
			return err
		}
	}},
}

func protected(work time.Duration) error {
	if work > 0 {
		time.Sleep(work)
	}
	return nil
}

// client connects to addr with a round-trip counter; every key the run
// makes starts with the prefix returned and is deleted when tb ends.
func client(tb testing.TB, addr string) (*redis.Client, *counter, string) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		tb.Fatalf("Redis %s: %v", addr, err)
	}
	prefix := fmt.Sprintf("bench:%d:%d:", os.Getpid(), time.Now().UnixNano())
	tb.Cleanup(func() {
		ctx := context.Background()
		for iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator(); iter.Next(ctx); {
			rdb.Del(ctx, iter.Val())
		}
		rdb.Close()
	})
	rt := &counter{}
	rdb.AddHook(rt)
	return rdb, rt, prefix
}

// run makes n calls spread over callers goroutines, call(i) being caller
// i's, and returns the Redis round trips per call, the failed calls and
// the first failure.
func run(rt *counter, callers, n int, call func(i int) error) (perCall float64, errs int64, first string) {
	var next, failed atomic.Int64
	var firstErr atomic.Value
	rt.n.Store(0)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := call(i); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	first, _ = firstErr.Load().(string)
	return float64(rt.n.Load()) / float64(n), failed.Load(), first
}

// BenchmarkBreakers runs work=<latency>/callers=<n>/<breaker>, reporting
// ns/op (calls/s = 1e9 / ns/op), Redis round trips per call and failed
// calls per call; the first failure is logged.
func BenchmarkBreakers(b *testing.B) {
	rdb, rt, prefix := client(b, *addr)
	works := []time.Duration{0}
	if *work > 0 {
		works = append(works, *work)
	}
	for _, w := range works {
		for _, callers := range []int{1, 32} {
			for _, c := range contenders {
				b.Run(fmt.Sprintf("work=%s/callers=%d/%s", w, callers, c.name), func(b *testing.B) {
					call := c.newCalls(b, rdb, prefix, fmt.Sprintf("%s-%d-%s", c.name, callers, w), callers, w)
					// One call per caller first: the pool's connections are
					// dialled (each a HELLO and a CLIENT SETINFO) and every
					// instance has its state, as under steady traffic.
					run(rt, callers, callers, call)
					b.ResetTimer()
					perCall, errs, first := run(rt, callers, b.N, call)
					b.ReportMetric(perCall, "roundtrips/op")
					b.ReportMetric(float64(errs)/float64(b.N), "errors/op")
					if first != "" {
						b.Logf("first error: %s", first)
					}
				})
			}
		}
	}
}

// TestRoundTrips is the benchmark's round-trip column on a private Redis
// with one caller: ours one round trip per call (the pre-check reads the
// cached state), gobreaker four (GET state, SET NX lock, SET state, unlock).
func TestRoundTrips(t *testing.T) {
	rdb, rt, prefix := client(t, localaws.StartRedis(t).Addr)
	for c, want := range map[string]float64{"lambdas-breaker": 1, "sony-gobreaker-v2": 4} {
		i := slices.IndexFunc(contenders, func(x contender) bool { return x.name == c })
		call := contenders[i].newCalls(t, rdb, prefix, c, 1, 0)
		if perCall, errs, first := run(rt, 1, 200, call); perCall != want || errs != 0 {
			t.Errorf("%s: %.2f round trips per call, %d failed calls (%s); want %g and none", c, perCall, errs, first, want)
		}
	}
}
