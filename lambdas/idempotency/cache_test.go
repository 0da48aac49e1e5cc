package idempotency

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	ctx := context.Background()
	ok := func(v string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return v, nil }
	}

	t.Run("completed duplicate costs no call", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.CacheSize = 8 })
		key, _ := KeyCobro("PED-1")
		if _, err := Do(ctx, e.store, key, ok("ch_1"), WithPayload("p")); err != nil {
			t.Fatal(err)
		}
		before := e.calls.snapshot()
		v, err := Do(ctx, e.store, key, ok("ch_2"), WithPayload("p"))
		if err != nil || v != "ch_1" {
			t.Fatalf("got %q, %v", v, err)
		}
		if _, err := Do(ctx, e.store, key, ok("ch_2"), WithPayload("other")); !errors.Is(err, ErrPayloadMismatch) {
			t.Fatalf("cached mismatch: %v", err)
		}
		if d := e.calls.since(before); d.Total() != 0 {
			t.Fatalf("cached duplicates made calls: %s", d)
		}
	})

	t.Run("duplicate read from the table fills the cache", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.CacheSize = 8 })
		other := newEnv(t, nil) // another Lambda instance
		other.store.cfg.TableName = e.table
		key, _ := KeyCobro("PED-2")
		if _, err := Do(ctx, other.store, key, ok("ch_1")); err != nil {
			t.Fatal(err)
		}
		if v, err := Do(ctx, e.store, key, ok("ch_2")); err != nil || v != "ch_1" {
			t.Fatalf("got %q, %v", v, err)
		}
		before := e.calls.snapshot()
		if v, err := Do(ctx, e.store, key, ok("ch_2")); err != nil || v != "ch_1" {
			t.Fatalf("got %q, %v", v, err)
		}
		if d := e.calls.since(before); d.Total() != 0 {
			t.Fatalf("second duplicate made calls: %s", d)
		}
	})

	t.Run("in progress and failed are never cached", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.CacheSize = 8 })
		key, _ := KeyCobro("PED-3")
		held := startBlocking(ctx, e.store, key)
		held.waitStarted(t)
		for range 2 {
			before := e.calls.snapshot()
			if _, err := Do(ctx, e.store, key, ok("x")); !errors.Is(err, ErrInProgress) {
				t.Fatalf("want ErrInProgress, got %v", err)
			}
			if e.calls.since(before).Total() == 0 {
				t.Fatal("EN_CURSO answered from the cache")
			}
		}
		_ = held.end(t, "", errTarjetaRechazada)
		for range 2 {
			before := e.calls.snapshot()
			if _, err := Do(ctx, e.store, key, ok("x")); !errors.Is(err, errTarjetaRechazada) {
				t.Fatalf("want the recorded failure, got %v", err)
			}
			if e.calls.since(before).Total() == 0 {
				t.Fatal("FALLIDO answered from the cache")
			}
		}
		if n := e.store.cache.len(); n != 0 {
			t.Fatalf("cache holds %d entries", n)
		}
	})

	t.Run("entries end with the record", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.CacheSize = 8 })
		key, _ := KeyCobro("PED-4")
		if _, err := Do(ctx, e.store, key, ok("v1")); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(DefaultExpiry + 2*time.Second)
		if v, err := Do(ctx, e.store, key, ok("v2")); err != nil || v != "v2" {
			t.Fatalf("after expiry got %q, %v, want a fresh run", v, err)
		}
	})

	t.Run("least recently used is evicted", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.CacheSize = 2 })
		keys := make([]string, 3)
		for i := range keys {
			keys[i], _ = KeyCobro(fmt.Sprintf("PED-LRU-%d", i))
			if _, err := Do(ctx, e.store, keys[i], ok(keys[i])); err != nil {
				t.Fatal(err)
			}
		}
		if n := e.store.cache.len(); n != 2 {
			t.Fatalf("cache holds %d entries, want 2", n)
		}
		// keys[0] was evicted by keys[2]; keys[2] and keys[1] are cached.
		for _, step := range []struct {
			i         int
			wantCalls bool
		}{{2, false}, {1, false}, {0, true}, {0, false}} {
			before := e.calls.snapshot()
			if v, err := Do(ctx, e.store, keys[step.i], ok("x")); err != nil || v != keys[step.i] {
				t.Fatalf("key %d: %q, %v", step.i, v, err)
			}
			if made := e.calls.since(before).Total() > 0; made != step.wantCalls {
				t.Errorf("key %d: made calls = %v, want %v", step.i, made, step.wantCalls)
			}
		}
	})
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
