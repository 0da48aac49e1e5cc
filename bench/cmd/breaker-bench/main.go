// Command breaker-bench measures the project's shared circuit breaker
// (lambdas/breaker) against sony/gobreaker/v2's DistributedCircuitBreaker on
// the same Redis, in the same run: Redis round trips per call and calls per
// second with 1 and 32 concurrent callers, each its own breaker instance,
// while the circuit is closed, for -duration; a second pass gives the call
// -work of latency, to show what holding a lock during the call costs.
// gobreaker's store is its usual one: JSON state under a key, a SET NX PX
// 5000 lock released by a compare-and-delete script.
//
// Usage (keys get a unique prefix and expire; nothing is flushed):
//
//	cd bench && go run ./cmd/breaker-bench -addr 127.0.0.1:6379
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/mercadofresco/integration/lambdas/breaker"
)

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
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	t := hex.EncodeToString(b)
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

type result struct {
	name            string
	callers         int
	work            time.Duration
	calls, errs     int64
	perCall, perSec float64
	firstError      string
}

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "Redis (or Valkey) address")
	duration := flag.Duration("duration", 3*time.Second, "length of each run")
	work := flag.Duration("work", 2*time.Millisecond, "latency of the protected call in the second pass (0 to skip)")
	flag.Parse()

	rdb := redis.NewClient(&redis.Options{Addr: *addr, PoolSize: 64})
	defer rdb.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		fmt.Fprintln(os.Stderr, "breaker-bench: Redis:", err)
		os.Exit(1)
	}
	rt := &counter{}
	rdb.AddHook(rt)
	prefix := fmt.Sprintf("bench:%d:%d:", os.Getpid(), time.Now().UnixNano())
	fmt.Printf("breaker-bench: Redis %s, %s per run, key prefix %s\n\n", *addr, *duration, prefix)

	var results []result
	works := []time.Duration{0}
	if *work > 0 {
		works = append(works, *work)
	}
	for _, w := range works {
		for _, callers := range []int{1, 32} {
			results = append(results, runOurs(rdb, rt, prefix, callers, w, *duration))
			results = append(results, runGobreaker(rdb, rt, prefix, callers, w, *duration))
		}
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| breaker\t protected call\t callers\t calls\t calls/s\t Redis round trips per call\t errors\t first error\t")
	fmt.Fprintln(tw, "|---\t---\t---\t---\t---\t---\t---\t---\t")
	for _, r := range results {
		fmt.Fprintf(tw, "| %s\t %s\t %d\t %d\t %.0f\t %.2f\t %d\t %s\t\n", r.name, r.work, r.callers, r.calls, r.perSec, r.perCall, r.errs, r.firstError)
	}
	tw.Flush()
	// Keys expire (ours after 24 h, gobreaker's state after 1 h); delete them now.
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
}

func run(name string, rt *counter, callers int, work, d time.Duration, call func(i int) error) result {
	var calls, errs atomic.Int64
	var first atomic.Value
	rt.n.Store(0)
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if err := call(i); err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err.Error())
					continue
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	r := result{name: name, callers: callers, work: work, calls: calls.Load(), errs: errs.Load()}
	if n := r.calls + r.errs; n > 0 {
		r.perCall = float64(rt.n.Load()) / float64(n)
	}
	r.perSec = float64(r.calls) / el.Seconds()
	if f, ok := first.Load().(string); ok {
		r.firstError = strings.ReplaceAll(f, "|", "/")
	}
	return r
}

func protected(work time.Duration) error {
	if work > 0 {
		time.Sleep(work)
	}
	return nil
}

func runOurs(rdb *redis.Client, rt *counter, prefix string, callers int, work, d time.Duration) result {
	store := breaker.NewRedisStore(rdb)
	name := fmt.Sprintf("ours-%d-%s", callers, work)
	bs := make([]*breaker.Breaker, callers)
	for i := range bs {
		b, err := breaker.New(store, breaker.Config{Name: name, KeyPrefix: prefix})
		if err != nil {
			panic(err)
		}
		bs[i] = b
	}
	// Load the scripts first (EVALSHA falls back to EVAL once per server).
	_ = bs[0].Do(context.Background(), func(context.Context) error { return errors.New("warm-up") })
	_ = bs[0].Do(context.Background(), func(context.Context) error { return nil })
	ctx := context.Background()
	return run("lambdas/breaker", rt, callers, work, d, func(i int) error {
		return bs[i].Do(ctx, func(context.Context) error { return protected(work) })
	})
}

func runGobreaker(rdb *redis.Client, rt *counter, prefix string, callers int, work, d time.Duration) result {
	name := fmt.Sprintf("%sgobreaker-%d-%s", prefix, callers, work)
	bs := make([]*gobreaker.DistributedCircuitBreaker[struct{}], callers)
	for i := range bs {
		store := &gbStore{rdb: rdb, tok: map[string]string{}}
		b, err := gobreaker.NewDistributedCircuitBreaker[struct{}](store, gobreaker.Settings{
			Name:        name,
			MaxRequests: 1,
			Timeout:     30 * time.Second,
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 20 },
		})
		if err != nil {
			panic(err)
		}
		bs[i] = b
	}
	return run("sony/gobreaker/v2", rt, callers, work, d, func(i int) error {
		_, err := bs[i].Execute(func() (struct{}, error) { return struct{}{}, protected(work) })
		return err
	})
}
