package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// cobro is a realistic result type: what the charge step hands to the next
// state of the order workflow.
type cobro struct {
	ReferenciaCobro string            `json:"referencia_cobro"`
	ImporteCentimos int64             `json:"importe_centimos"`
	Moneda          string            `json:"moneda"`
	CobradoEn       time.Time         `json:"cobrado_en"`
	Extra           map[string]string `json:"extra,omitempty"`
}

var errTarjetaRechazada = failure.Permanent("tarjeta_rechazada", errors.New("card declined by issuer"))

// TestRaceSideEffectOncePerKey: many concurrent deliveries of the same
// messages over many keys run the side effect exactly once per key, and
// every delivery ends with the same result.
func TestRaceSideEffectOncePerKey(t *testing.T) {
	// Each key is one trial of 24-way contention; 40 trials keep the race
	// on every key while the test stays a few seconds under the race
	// detector (dynalite answers every call).
	const (
		workers = 24
		keys    = 40
	)
	e := newEnv(t, nil)
	rnd := testseed.New(t)
	var effects [keys]atomic.Int64
	var produced [keys]atomic.Value
	var inProgressSeen atomic.Int64

	type delivery struct {
		key int
		got cobro
	}
	results := make(chan delivery, workers*keys)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			<-start
			// Every worker walks the keys in the same order, so that all of
			// them hit each key at about the same time: maximum contention.
			for k := range keys {
				key, _ := KeyCobro(fmt.Sprintf("PED-2026-%06d", k))
				for attempt := 0; ; attempt++ {
					got, err := Do(context.Background(), e.store, key, func(ctx context.Context) (cobro, error) {
						effects[k].Add(1)
						time.Sleep(time.Duration(2+rnd.IntN(6)) * time.Millisecond) // widen the window
						c := cobro{ReferenciaCobro: fmt.Sprintf("ch_%d_w%d", k, w), ImporteCentimos: 4820, Moneda: "EUR"}
						produced[k].Store(c)
						return c, nil
					})
					if errors.Is(err, ErrInProgress) {
						// What SQS would do: redeliver later.
						inProgressSeen.Add(1)
						time.Sleep(time.Duration(1+rnd.IntN(4)) * time.Millisecond)
						continue
					}
					if err != nil {
						t.Errorf("worker %d key %d: %v", w, k, err)
						return
					}
					results <- delivery{key: k, got: got}
					break
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(results)

	for k := range keys {
		if n := effects[k].Load(); n != 1 {
			t.Errorf("key %d: side effect ran %d times, want exactly 1", k, n)
		}
	}
	n := 0
	for d := range results {
		n++
		want := produced[d.key].Load().(cobro)
		if !reflect.DeepEqual(d.got, want) {
			t.Errorf("key %d: delivery got %+v, want the one stored result %+v", d.key, d.got, want)
		}
	}
	if n != workers*keys {
		t.Errorf("%d deliveries finished, want %d", n, workers*keys)
	}
	if inProgressSeen.Load() == 0 {
		t.Error("no delivery ever met a live lock: the test did not race")
	}
	t.Logf("%d deliveries, %d ErrInProgress answers, %d DynamoDB calls", n, inProgressSeen.Load(), e.calls.snapshot().Total())
}

// blockingRun starts Do in a goroutine with a handler that signals when it
// runs and then waits for its outcome.
type blockingRun struct {
	started chan struct{}
	finish  chan func() (string, error)
	done    chan runResult
}

type runResult struct {
	v   string
	err error
}

func startBlocking(ctx context.Context, s *Store, key string) *blockingRun {
	return startBlockingWith(ctx, s, key)
}

func (b *blockingRun) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-b.started:
	case r := <-b.done:
		t.Fatalf("handler never ran: Do returned %q, %v", r.v, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("handler did not start")
	}
}

func (b *blockingRun) end(t *testing.T, v string, err error) runResult {
	t.Helper()
	b.finish <- func() (string, error) { return v, err }
	select {
	case r := <-b.done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Do did not return")
		return runResult{}
	}
}

// TestDyingConsumer: a consumer that dies between claim and completion
// blocks the key only until its lock expires; then the next delivery takes
// over, and the dead owner's late outcome cannot touch the new owner's
// record, whatever that outcome is and whatever state the new owner is in.
func TestDyingConsumer(t *testing.T) {
	const lock = 30 * time.Second
	for _, oldOutcome := range []struct {
		name string
		err  error
	}{
		{"late success", nil},
		{"late transient failure", errors.New("gateway timeout")},
		{"late permanent failure", errTarjetaRechazada},
	} {
		for _, newOwnerDone := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/new owner finished=%v", oldOutcome.name, newOwnerDone), func(t *testing.T) {
				e := newEnv(t, func(c *Config) { c.LockWindow = lock })
				key, _ := KeyCobro("PED-2026-084417")
				ctx := context.Background()

				old := startBlocking(ctx, e.store, key)
				old.waitStarted(t)
				oldOwner := sAttr(t, e.rawItem(t, key), attrPropietario)

				// While the lock lives, a redelivery backs off without running.
				_, err := Do(ctx, e.store, key, func(context.Context) (string, error) {
					t.Error("handler ran while another owner held a live lock")
					return "", nil
				})
				var ip *InProgressError
				if !errors.As(err, &ip) || !errors.Is(err, ErrInProgress) {
					t.Fatalf("during the lock: want *InProgressError, got %v", err)
				}
				if d := time.Until(ip.LockExpiresAt); d < lock-5*time.Second || d > lock+time.Second {
					t.Errorf("LockExpiresAt in %s, want about %s", d, lock)
				}

				// The owner "dies": time passes beyond its lock.
				e.clock.Advance(lock + time.Second)

				var newRes runResult
				if newOwnerDone {
					v, err := Do(ctx, e.store, key, func(context.Context) (string, error) { return "ref-nuevo", nil })
					newRes = runResult{v, err}
					if err != nil || v != "ref-nuevo" {
						t.Fatalf("takeover: %q, %v", v, err)
					}
				}
				var takeover *blockingRun
				if !newOwnerDone {
					takeover = startBlocking(ctx, e.store, key)
					takeover.waitStarted(t)
				}
				newOwner := sAttr(t, e.rawItem(t, key), attrPropietario)
				if newOwner == oldOwner {
					t.Fatal("takeover kept the old owner token")
				}
				before := e.rawItem(t, key)

				// The old owner comes back and tries to record its outcome.
				late := old.end(t, "ref-viejo", oldOutcome.err)
				if !errors.Is(late.err, ErrLockLost) {
					t.Fatalf("late owner: want ErrLockLost, got %q, %v", late.v, late.err)
				}
				if oldOutcome.err != nil && !errors.Is(late.err, oldOutcome.err) {
					t.Errorf("late owner's own error lost from %v", late.err)
				}
				if after := e.rawItem(t, key); !reflect.DeepEqual(after, before) {
					t.Fatalf("late owner changed the new owner's record:\nbefore %v\nafter  %v", before, after)
				}

				if !newOwnerDone {
					r := takeover.end(t, "ref-nuevo", nil)
					if r.err != nil || r.v != "ref-nuevo" {
						t.Fatalf("new owner completion: %q, %v", r.v, r.err)
					}
				}
				v, err := Do(ctx, e.store, key, func(context.Context) (string, error) {
					t.Error("handler ran after completion")
					return "", nil
				})
				if err != nil || v != "ref-nuevo" {
					t.Fatalf("repeat after takeover: %q, %v (newRes %+v)", v, err, newRes)
				}
			})
		}
	}
}

// TestLateCompletionWithoutTakeoverIsKept: an owner that overran its lock
// but was not taken over still records its result (the effect happened).
func TestLateCompletionWithoutTakeoverIsKept(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.LockWindow = time.Second })
	key, _ := KeyCorreoConfirmacion("PED-1")
	v, err := Do(context.Background(), e.store, key, func(context.Context) (string, error) {
		e.clock.Advance(time.Minute)
		return "enviado", nil
	})
	if err != nil || v != "enviado" {
		t.Fatalf("got %q, %v", v, err)
	}
	if st := sAttr(t, e.rawItem(t, key), attrEstado); st != string(StatusCompleted) {
		t.Fatalf("estado %s", st)
	}
}

// TestRepeatReturnsIdenticalResult: the stored result comes back unchanged,
// decoded from the very bytes the first run stored.
func TestRepeatReturnsIdenticalResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(testing.TB, func(*Config)) *env
	}{{"GetItem fallback", newEnv}, {"ALL_OLD", newEnvAllOld}} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.env(t, nil)
			key, _ := KeyCobro("PED-2026-084417")
			first := cobro{
				ReferenciaCobro: "ch_3PqX84417", ImporteCentimos: 4820, Moneda: "EUR",
				CobradoEn: time.Date(2026, 10, 16, 18, 12, 3, 123456789, time.UTC),
				Extra:     map[string]string{"pasarela": "pagos-sur", "ñ": "ü"},
			}
			runs := 0
			charge := func(ctx context.Context) (cobro, error) {
				runs++
				if runs == 1 {
					return first, nil
				}
				return cobro{ReferenciaCobro: "ch_SECOND_CHARGE"}, nil
			}
			got1, err := Do(context.Background(), e.store, key, charge)
			if err != nil {
				t.Fatal(err)
			}
			stored := sAttr(t, e.rawItem(t, key), attrResultado)
			for i := range 3 {
				got, err := Do(context.Background(), e.store, key, charge)
				if err != nil {
					t.Fatalf("repeat %d: %v", i, err)
				}
				if !reflect.DeepEqual(got, got1) || !got.CobradoEn.Equal(first.CobradoEn) {
					t.Fatalf("repeat %d: got %+v, want %+v", i, got, got1)
				}
			}
			if runs != 1 {
				t.Fatalf("handler ran %d times", runs)
			}
			if again := sAttr(t, e.rawItem(t, key), attrResultado); again != stored {
				t.Fatalf("stored result changed: %s -> %s", stored, again)
			}
			want, _ := json.Marshal(first)
			if stored != string(want) {
				t.Fatalf("stored %s, want %s", stored, want)
			}
		})
	}
}

// TestOutcomes: transient failures release the key, permanent ones are
// recorded and replayed, successes are recorded.
func TestOutcomes(t *testing.T) {
	errTimeout := errors.New("read timeout from gateway")
	for _, tc := range []struct {
		name        string
		err         error
		wantItem    bool   // a record remains after the first run
		wantEstado  Status // when wantItem
		wantCode    string // error_codigo for FALLIDO
		secondRuns  bool   // the handler runs again on the next delivery
		secondErrIs error
	}{
		{name: "transient releases the key", err: errTimeout, secondRuns: true},
		{name: "context deadline is transient", err: context.DeadlineExceeded, secondRuns: true},
		{name: "wrapped sentinel is permanent", err: fmt.Errorf("charge: %w", errTarjetaRechazada), wantItem: true, wantEstado: StatusFailed, wantCode: "tarjeta_rechazada", secondErrIs: errTarjetaRechazada},
		{name: "Permanent wrapper", err: failure.Permanent("direccion_invalida", errors.New("postcode 99999 does not exist")), wantItem: true, wantEstado: StatusFailed, wantCode: "direccion_invalida", secondErrIs: failure.Permanent("direccion_invalida", errors.New(""))},
		{name: "success", wantItem: true, wantEstado: StatusCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			key, _ := KeyCobro("PED-7")
			runs := 0
			fn := func(context.Context) (string, error) {
				runs++
				if runs == 1 && tc.err != nil {
					return "", tc.err
				}
				return fmt.Sprintf("run-%d", runs), nil
			}
			_, err := Do(context.Background(), e.store, key, fn)
			if !errors.Is(err, tc.err) {
				t.Fatalf("first run: want the handler's error %v back, got %v", tc.err, err)
			}
			item := e.rawItem(t, key)
			if (len(item) > 0) != tc.wantItem {
				t.Fatalf("record after first run: %v, want present=%v", item, tc.wantItem)
			}
			if tc.wantItem {
				if st := sAttr(t, item, attrEstado); st != string(tc.wantEstado) {
					t.Fatalf("estado %s, want %s", st, tc.wantEstado)
				}
				if _, ok := item[attrCaducaBloqueo]; ok {
					t.Errorf("terminal record keeps %s", attrCaducaBloqueo)
				}
				if tc.wantCode != "" {
					if c := sAttr(t, item, attrErrorCodigo); c != tc.wantCode {
						t.Errorf("error_codigo %s, want %s", c, tc.wantCode)
					}
				}
			}
			v, err := Do(context.Background(), e.store, key, fn)
			if ran := runs == 2; ran != tc.secondRuns {
				t.Fatalf("second delivery ran the handler: %v, want %v", ran, tc.secondRuns)
			}
			switch {
			case tc.secondErrIs != nil:
				var pe *failure.Error
				if !errors.Is(err, tc.secondErrIs) || !errors.Is(err, failure.ErrPermanent) || !errors.As(err, &pe) || !pe.Replayed {
					t.Fatalf("second delivery: want replayed permanent error matching %v, got %#v", tc.secondErrIs, err)
				}
				if errors.Is(err, failure.Permanent("otro_codigo", errors.New(""))) {
					t.Error("replayed error matches a different code")
				}
			case err != nil:
				t.Fatalf("second delivery: %v", err)
			case tc.secondRuns && v != "run-2":
				t.Fatalf("second delivery got %q, want a fresh run", v)
			case !tc.secondRuns && v != "run-1":
				t.Fatalf("second delivery got %q, want the stored run-1", v)
			}
		})
	}
}

func TestPanicReleasesKey(t *testing.T) {
	e := newEnv(t, nil)
	key, _ := KeyCobro("PED-PANIC")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the handler's panic", r)
			}
		}()
		_, _ = Do(context.Background(), e.store, key, func(context.Context) (int, error) { panic("boom") })
	}()
	if item := e.rawItem(t, key); len(item) != 0 {
		t.Fatalf("key still held after panic: %v", item)
	}
}

// TestUnstorableResultIsRecordedAsFailure: a side effect whose result
// cannot be stored must not run again on the next delivery.
func TestUnstorableResultIsRecordedAsFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(context.Context) (any, error)
	}{
		{"not JSON", func(context.Context) (any, error) { return make(chan int), nil }},
		{"too large", func(context.Context) (any, error) { return strings.Repeat("x", MaxResultBytes), nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			key, _ := KeyCobro("PED-UNSTORABLE")
			runs := 0
			fn := func(ctx context.Context) (any, error) { runs++; return tc.fn(ctx) }
			_, err := Do(context.Background(), e.store, key, fn)
			unstorable := failure.Permanent(CodeUnstorableResult, errors.New(""))
			if !errors.Is(err, unstorable) {
				t.Fatalf("first run: want %s, got %v", CodeUnstorableResult, err)
			}
			if st := sAttr(t, e.rawItem(t, key), attrEstado); st != string(StatusFailed) {
				t.Fatalf("estado %s, want FALLIDO", st)
			}
			if _, err := Do(context.Background(), e.store, key, fn); !errors.Is(err, unstorable) || runs != 1 {
				t.Fatalf("repeat: runs=%d err=%v", runs, err)
			}
		})
	}
}

func TestLongErrorTextIsTruncated(t *testing.T) {
	e := newEnv(t, nil)
	key, _ := KeyCobro("PED-LONG")
	long := strings.Repeat("ñ", 100_000)
	_, err := Do(context.Background(), e.store, key, func(context.Context) (int, error) {
		return 0, failure.Permanent("datos_invalidos", errors.New(long))
	})
	if !errors.Is(err, failure.ErrPermanent) {
		t.Fatal(err)
	}
	msg := sAttr(t, e.rawItem(t, key), attrErrorMensaje)
	cut, ok := strings.CutSuffix(msg, "…")
	if len(msg) > maxErrorMessageBytes || !ok || !strings.HasPrefix(long, cut) || len(msg) < maxErrorMessageBytes-2 {
		t.Fatalf("stored message of %d bytes", len(msg))
	}
}

func TestPayloadValidation(t *testing.T) {
	e := newEnv(t, nil)
	key, _ := KeyCobro("PED-9")
	ctx := context.Background()
	runs := 0
	fn := func(context.Context) (string, error) { runs++; return "ok", nil }

	if _, err := Do(ctx, e.store, key, fn, WithPayload(map[string]any{"pedido_id": "PED-9", "importe": 48.20})); err != nil {
		t.Fatal(err)
	}
	// Same content, different encoding: a replay.
	v, err := Do(ctx, e.store, key, fn, WithPayload(json.RawMessage(`{ "importe": 48.20, "pedido_id": "PED-9" }`)))
	if err != nil || v != "ok" {
		t.Fatalf("same payload re-encoded: %q, %v", v, err)
	}
	// Different content: an error, not a silent replay.
	_, err = Do(ctx, e.store, key, fn, WithPayload(map[string]any{"pedido_id": "PED-9", "importe": 4820}))
	if !errors.Is(err, ErrPayloadMismatch) {
		t.Fatalf("different payload: want ErrPayloadMismatch, got %v", err)
	}
	// Without a payload there is nothing to compare: the result replays.
	if v, err := Do(ctx, e.store, key, fn); err != nil || v != "ok" {
		t.Fatalf("no payload: %q, %v", v, err)
	}
	if runs != 1 {
		t.Fatalf("handler ran %d times", runs)
	}

	// A mismatch is also reported against a record still in progress.
	key2, _ := KeyCobro("PED-10")
	held := startBlockingWith(ctx, e.store, key2, WithPayload("a"))
	held.waitStarted(t)
	_, err = Do(ctx, e.store, key2, fn, WithPayload("b"))
	if !errors.Is(err, ErrPayloadMismatch) {
		t.Fatalf("mismatch against EN_CURSO: got %v", err)
	}
	_ = held.end(t, "done", nil)

	if _, err := Do(ctx, e.store, key, fn, WithPayload(make(chan int))); err == nil {
		t.Fatal("unencodable payload accepted")
	}
}

func startBlockingWith(ctx context.Context, s *Store, key string, opts ...Option) *blockingRun {
	b := &blockingRun{started: make(chan struct{}), finish: make(chan func() (string, error)), done: make(chan runResult, 1)}
	go func() {
		v, err := Do(ctx, s, key, func(context.Context) (string, error) {
			close(b.started)
			return (<-b.finish)()
		}, opts...)
		b.done <- runResult{v, err}
	}()
	return b
}

// TestExpiredRecordCountsAsAbsent: a record past expira_en that TTL has not
// deleted yet is reused, whatever its state.
func TestExpiredRecordCountsAsAbsent(t *testing.T) {
	for _, first := range []struct {
		name string
		err  error
	}{{"COMPLETADO", nil}, {"FALLIDO", errTarjetaRechazada}} {
		t.Run(first.name, func(t *testing.T) {
			e := newEnv(t, nil)
			key, _ := KeyCobro("PED-OLD")
			_, _ = Do(context.Background(), e.store, key, func(context.Context) (string, error) { return "v1", first.err })
			item := e.rawItem(t, key)
			if exp := nAttr(t, item, attrExpiraEn); exp < e.clock.Now().Add(DefaultExpiry-time.Minute).Unix() || exp > e.clock.Now().Add(DefaultExpiry+time.Minute).Unix() {
				t.Fatalf("expira_en %d is not now + 24 h", exp)
			}

			e.clock.Advance(23 * time.Hour)
			v, err := Do(context.Background(), e.store, key, func(context.Context) (string, error) { return "v2", nil })
			if first.err == nil && (err != nil || v != "v1") {
				t.Fatalf("before expiry: %q, %v, want the stored v1", v, err)
			}
			if first.err != nil && !errors.Is(err, first.err) {
				t.Fatalf("before expiry: %v, want the stored failure", err)
			}

			e.clock.Advance(time.Hour + 2*time.Second)
			v, err = Do(context.Background(), e.store, key, func(context.Context) (string, error) { return "v2", nil })
			if err != nil || v != "v2" {
				t.Fatalf("after expiry: %q, %v, want a fresh run", v, err)
			}
		})
	}
}

// TestLockExpiry checks caduca_bloqueo against its three sources.
func TestLockExpiry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		window   time.Duration
		deadline time.Duration // 0 = no deadline
		want     time.Duration
	}{
		{"default", 0, 0, DefaultLockWindow},
		{"explicit window", 90 * time.Second, 0, 90 * time.Second},
		{"Lambda remaining time", 0, 20 * time.Second, 20 * time.Second},
		{"shorter of window and deadline", 10 * time.Second, 20 * time.Second, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.LockWindow = tc.window })
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-84417"})
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			key, _ := KeyCobro("PED-LOCK")
			var item map[string]types.AttributeValue
			claimedAt := e.clock.Now()
			_, err := Do(ctx, e.store, key, func(context.Context) (bool, error) {
				item = e.rawItem(t, key)
				return true, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := time.UnixMilli(nAttr(t, item, attrCaducaBloqueo)).Sub(claimedAt)
			if got < tc.want-2*time.Second || got > tc.want+time.Second {
				t.Errorf("lock lasts %s, want about %s", got, tc.want)
			}
			if owner := sAttr(t, item, attrPropietario); !strings.HasPrefix(owner, "req-84417/") {
				t.Errorf("owner %q does not name the Lambda request", owner)
			}
		})
	}
}

// TestWaitForInProgress: with InProgressWait a duplicate waits for the
// owner and returns its result instead of failing.
func TestWaitForInProgress(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.InProgressWait = 10 * time.Second })
	key, _ := KeyCobro("PED-WAIT")
	ctx := context.Background()
	owner := startBlocking(ctx, e.store, key)
	owner.waitStarted(t)

	// The waiter's claim has been answered "in progress" (its PutItem
	// returned) before the owner ends: it is then waiting, not early.
	answered := e.calls.putsAnswered.Load()
	waiter := make(chan runResult, 1)
	go func() {
		v, err := Do(ctx, e.store, key, func(context.Context) (string, error) { return "waiter ran", nil })
		waiter <- runResult{v, err}
	}()
	e.calls.waitPutsAnswered(t, answered+1)
	if r := owner.end(t, "ref-owner", nil); r.err != nil {
		t.Fatal(r.err)
	}
	select {
	case r := <-waiter:
		if r.err != nil || r.v != "ref-owner" {
			t.Fatalf("waiter got %q, %v, want the owner's result", r.v, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter did not return")
	}

	// If the owner fails transiently, the waiter claims the released key
	// and runs its own handler.
	key2, _ := KeyCobro("PED-WAIT-2")
	owner2 := startBlocking(ctx, e.store, key2)
	owner2.waitStarted(t)
	answered = e.calls.putsAnswered.Load()
	go func() {
		v, err := Do(ctx, e.store, key2, func(context.Context) (string, error) { return "waiter ran", nil })
		waiter <- runResult{v, err}
	}()
	e.calls.waitPutsAnswered(t, answered+1)
	if r := owner2.end(t, "", errTransient); !errors.Is(r.err, errTransient) {
		t.Fatal(r.err)
	}
	select {
	case r := <-waiter:
		if r.err != nil || r.v != "waiter ran" {
			t.Fatalf("waiter got %q, %v, want its own run", r.v, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter did not return")
	}

	// A wait that runs out still reports ErrInProgress.
	short := newEnv(t, func(c *Config) { c.InProgressWait = 200 * time.Millisecond })
	held := startBlocking(ctx, short.store, key)
	held.waitStarted(t)
	begin := time.Now()
	_, err := Do(ctx, short.store, key, func(context.Context) (string, error) { return "", nil })
	if !errors.Is(err, ErrInProgress) {
		t.Fatalf("want ErrInProgress after the wait, got %v", err)
	}
	if d := time.Since(begin); d < 150*time.Millisecond {
		t.Errorf("gave up after %s, want about 200ms", d)
	}
	_ = held.end(t, "", nil)
}

// TestCorruptOrForeignItem: items the package did not write give a clear
// error naming the key and the problem, and the handler does not run.
func TestCorruptOrForeignItem(t *testing.T) {
	future := attrN(time.Now().Add(time.Hour).Unix())
	for _, tc := range []struct {
		name string
		item map[string]types.AttributeValue
		want string
	}{
		{"no estado", map[string]types.AttributeValue{"importe": attrN(4820)}, "no estado attribute"},
		{"unknown estado", map[string]types.AttributeValue{attrEstado: attrS("HECHO"), attrExpiraEn: future}, `unknown estado "HECHO"`},
		{"estado is a number", map[string]types.AttributeValue{attrEstado: attrN(1), attrExpiraEn: future}, "estado is N, want a string"},
		{"no expira_en", map[string]types.AttributeValue{attrEstado: attrS("COMPLETADO"), attrResultado: attrS(`"x"`)}, "no expira_en attribute"},
		{"expira_en is a string", map[string]types.AttributeValue{attrEstado: attrS("COMPLETADO"), attrResultado: attrS(`"x"`), attrExpiraEn: attrS("mañana")}, "expira_en is S, want a number"},
		{"COMPLETADO without resultado", map[string]types.AttributeValue{attrEstado: attrS("COMPLETADO"), attrExpiraEn: future}, "COMPLETADO record without resultado"},
		{"resultado is a map", map[string]types.AttributeValue{attrEstado: attrS("COMPLETADO"), attrExpiraEn: future, attrResultado: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}, "resultado is M"},
		{"resultado is not JSON", map[string]types.AttributeValue{attrEstado: attrS("COMPLETADO"), attrExpiraEn: future, attrResultado: attrS("ch_123")}, "resultado does not decode into idempotency.cobro"},
		{"resultado of another type", map[string]types.AttributeValue{attrEstado: attrS("COMPLETADO"), attrExpiraEn: future, attrResultado: attrS(`[1,2]`)}, "resultado does not decode into idempotency.cobro"},
		{"EN_CURSO without caduca_bloqueo", map[string]types.AttributeValue{attrEstado: attrS("EN_CURSO"), attrExpiraEn: future}, "EN_CURSO record without caduca_bloqueo"},
		{"FALLIDO without code", map[string]types.AttributeValue{attrEstado: attrS("FALLIDO"), attrExpiraEn: future}, "FALLIDO record without error_codigo"},
		{"fractional expira_en", map[string]types.AttributeValue{attrEstado: attrS("COMPLETADO"), attrExpiraEn: &types.AttributeValueMemberN{Value: "99999999999.5"}, attrResultado: attrS(`{}`)}, "not an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mk := range []func(testing.TB, func(*Config)) *env{newEnv, newEnvAllOld} {
				e := mk(t, nil)
				key, _ := KeyCobro("PED-CORRUPT")
				tc.item[lambdaapi.IdempotencyKeyAttribute] = attrS(key)
				e.putRaw(t, tc.item)
				_, err := Do(context.Background(), e.store, key, func(context.Context) (cobro, error) {
					t.Error("handler ran over a corrupt record")
					return cobro{}, nil
				})
				var re *RecordError
				if !errors.Is(err, ErrCorruptRecord) || !errors.As(err, &re) || re.Key != key {
					t.Fatalf("want a *RecordError for %q, got %v", key, err)
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), key) {
					t.Fatalf("error %q does not say %q and name the key", err, tc.want)
				}
			}
		})
	}
}

func TestStoreErrors(t *testing.T) {
	s, err := NewStore(dynalite.Client, Config{TableName: "no-such-table"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Do(context.Background(), s, "cobro:PED-1", func(context.Context) (string, error) {
		t.Error("handler ran without a claim")
		return "", nil
	})
	var nf *types.ResourceNotFoundException
	if !errors.Is(err, ErrStore) || !errors.As(err, &nf) {
		t.Fatalf("missing table: want ErrStore wrapping ResourceNotFoundException, got %v", err)
	}

	// A table whose key is not the configured attribute.
	e := newEnv(t, func(c *Config) { c.KeyAttribute = "id" })
	_, err = Do(context.Background(), e.store, "cobro:PED-1", func(context.Context) (string, error) { return "", nil })
	if !errors.Is(err, ErrStore) || !strings.Contains(err.Error(), "ValidationException") {
		t.Fatalf("wrong key attribute: got %v", err)
	}

	// Invalid keys are refused before any call.
	e = newEnv(t, nil)
	for _, k := range []string{"", strings.Repeat("x", MaxKeyBytes+1), "\xff"} {
		if _, err := Do(context.Background(), e.store, k, func(context.Context) (string, error) { return "", nil }); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("key %q: want ErrInvalidKey, got %v", k, err)
		}
	}
	if n := e.calls.snapshot().Total(); n != 0 {
		t.Errorf("%d calls for invalid keys", n)
	}
}

func TestDoRejectsMissingStoreOrHandler(t *testing.T) {
	if _, err := Do[string](context.Background(), nil, "cobro:PED-1", func(context.Context) (string, error) { return "", nil }); err == nil {
		t.Error("nil store accepted")
	}
	e := newEnv(t, nil)
	if _, err := Do[string](context.Background(), e.store, "cobro:PED-1", nil); err == nil {
		t.Error("nil handler accepted")
	}
}

func TestNewStoreValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		db   DynamoDBAPI
		cfg  Config
	}{
		{"nil client", nil, Config{TableName: "t"}},
		{"no table", dynalite.Client, Config{}},
		{"key collides", dynalite.Client, Config{TableName: "t", KeyAttribute: attrEstado}},
		{"negative expiry", dynalite.Client, Config{TableName: "t", Expiry: -time.Hour}},
		{"sub-second expiry", dynalite.Client, Config{TableName: "t", Expiry: time.Millisecond}},
		{"negative cache", dynalite.Client, Config{TableName: "t", CacheSize: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewStore(tc.db, tc.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	s, err := NewStore(dynalite.Client, Config{TableName: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.KeyAttribute != "clave" || s.cfg.Expiry != 24*time.Hour || s.cache != nil {
		t.Fatalf("defaults: %+v", s.cfg)
	}
}
