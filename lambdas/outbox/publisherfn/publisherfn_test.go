package publisherfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/internal/pgtest"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

// testPool returns a pool on a fresh, migrated schema of mf_outbox_test.
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t, "mf_outbox_test", "op_", 4)
	if _, err := outbox.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

// countingSink accepts every entry and counts them; PutEvents runs on
// concurrent goroutines (MaxConcurrentCalls), hence the atomic. reached is
// closed once want entries were accepted.
type countingSink struct {
	n       atomic.Int64
	want    int64
	reached chan struct{}
	once    sync.Once
}

func newCountingSink(want int64) *countingSink {
	return &countingSink{want: want, reached: make(chan struct{})}
}

func (s *countingSink) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	if s.n.Add(int64(len(in.Entries))) >= s.want {
		s.once.Do(func() { close(s.reached) })
	}
	return &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}, nil
}

// The publisher's run context ends margin before the Lambda deadline.
func TestRunContextEndsMarginBeforeTheDeadline(t *testing.T) {
	deadline := time.Date(2026, 12, 4, 19, 0, 0, 0, time.UTC)
	lctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	h := &Handler{margin: 20 * time.Second}
	rctx, rcancel := h.runContext(lctx)
	defer rcancel()
	if d, ok := rctx.Deadline(); !ok || !d.Equal(deadline.Add(-20*time.Second)) {
		t.Fatalf("run deadline = %v (set %v), want %v", d, ok, deadline.Add(-20*time.Second))
	}
}

// One invocation publishes what is pending and returns the counts when its
// run context ends (here: cancelled as soon as the bus has every event).
func TestHandlePublishesWhatIsPending(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	for i := range 25 {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := outbox.Add(ctx, tx, outbox.Event{AggregateID: fmt.Sprintf("ped-%d", i), Type: "PedidoCreado", Payload: json.RawMessage(`{"version":1}`)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sink := newCountingSink(25)
	pub, err := outbox.NewPublisher(pool, sink, outbox.Config{BusName: "bus", Source: "src", PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{pool: pool, pub: pub, margin: time.Second}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	go func() {
		select {
		case <-sink.reached:
		case <-lctx.Done():
		}
		cancel()
	}()
	res, err := h.Handle(lctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Publicados != 25 || res.Reclamados != 25 || sink.n.Load() != 25 {
		t.Fatalf("resultado %+v, sink %d; want 25 published", res, sink.n.Load())
	}
}

// A publisher that cannot reach its database fails the invocation, so the
// function's Errors alarm fires (before, Run logged and returned nil).
func TestHandleFailsWhenEveryRoundFails(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The invocation ends as soon as the publisher has logged a failed round.
	log := slog.New(onMessage{"outbox: publish round failed", cancel})
	pub, err := outbox.NewPublisher(pool, newCountingSink(1), outbox.Config{BusName: "bus", Source: "src", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pool.Close() // every claim now fails
	h := &Handler{pool: pool, pub: pub, margin: 0}
	if _, err := h.Handle(lctx); err == nil {
		t.Fatal("handle succeeded although no round could reach the database")
	}
	if errors.Is(lctx.Err(), context.DeadlineExceeded) {
		t.Fatal("the publisher never logged a failed round")
	}
}

// onMessage is a slog handler that calls fn when a record with message msg
// is logged.
type onMessage struct {
	msg string
	fn  func()
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h onMessage) WithGroup(string) slog.Handler            { return h }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.fn()
	}
	return nil
}
