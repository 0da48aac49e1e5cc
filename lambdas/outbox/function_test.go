package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/metrics"
)

// testPool returns a pool on a fresh, migrated schema of mf_outbox_test.
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, _ := migratedPool(t)
	return pool
}

// countingSink accepts every entry and counts them; PutEvents runs on
// concurrent goroutines (maxConcurrentCalls), hence the atomic. reached is
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
func TestPublisherRunContextEndsMarginBeforeTheDeadline(t *testing.T) {
	deadline := time.Date(2026, 12, 4, 19, 0, 0, 0, time.UTC)
	lctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	rctx, rcancel := runContext(lctx, 20*time.Second)
	defer rcancel()
	if d, ok := rctx.Deadline(); !ok || !d.Equal(deadline.Add(-20*time.Second)) {
		t.Fatalf("run deadline = %v (set %v), want %v", d, ok, deadline.Add(-20*time.Second))
	}
}

// One invocation publishes what is pending and returns the counts when its
// run context ends (here: cancelled as soon as the bus has every event).
func TestPublisherHandlePublishesWhatIsPending(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	for i := range 25 {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Add(ctx, tx, Event{AggregateID: fmt.Sprintf("ped-%d", i), Type: "PedidoCreado", Payload: json.RawMessage(`{"version":1}`)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sink := newCountingSink(25)
	pub, err := NewPublisher(pool, sink, Config{BusName: "bus", Source: "src", PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := &PublisherHandler{pub: pub, margin: time.Second}
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
func TestPublisherHandleFailsWhenEveryRoundFails(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// The invocation ends as soon as the publisher has logged a failed round.
	log := slog.New(onMessage{"outbox: publish round failed", cancel})
	pub, err := NewPublisher(pool, newCountingSink(1), Config{BusName: "bus", Source: "src", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pool.Close() // every claim now fails
	h := &PublisherHandler{pub: pub, margin: 0}
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

func TestCleanupHandleDeletesOldPublishedRowsAndReportsMetrics(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	if _, err := pool.Exec(ctx, `
INSERT INTO outbox (id, agregado_id, tipo, payload, creado_en, publicado_en)
SELECT gen_random_uuid(), 'p' || g, 'PedidoCreado', '{}', now() - interval '10 days',
       CASE WHEN g <= 7 THEN now() - interval '9 days' END
FROM generate_series(1, 10) g`); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	h := &CleanupHandler{
		margin:  cleanupStopMargin,
		db:      pool,
		cfg:     CleanupConfig{BatchSize: 2},
		metrics: metrics.ForEnvironment(&out, "test"),
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := h.Handle(lctx)
	if err != nil || res.Borrados != 7 {
		t.Fatalf("handle = %+v, %v; want 7 deleted", res, err)
	}
	if !strings.Contains(out.String(), `"DeletedEvents":7`) || !strings.Contains(out.String(), `"PendingEvents":3`) {
		t.Fatalf("EMF line = %s", out.String())
	}
}

func TestCleanupSettings(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    CleanupConfig
		wantErr bool
	}{
		{map[string]string{}, CleanupConfig{Retention: 7 * 24 * time.Hour, BatchSize: 1000}, false},
		{map[string]string{"RETENTION_DAYS": "3", "BATCH_SIZE": "10"}, CleanupConfig{Retention: 3 * 24 * time.Hour, BatchSize: 10}, false},
		{map[string]string{"RETENTION_DAYS": "0"}, CleanupConfig{}, true},
		{map[string]string{"BATCH_SIZE": "x"}, CleanupConfig{}, true},
	}
	for _, tc := range tests {
		env := lambdaenv.FromMap(tc.env)
		got := CleanupSettings(env)
		if err := env.Err(); (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("CleanupSettings(%v) = %+v, %v", tc.env, got, err)
		}
	}
}

// A cleanup stopped by its margin before the Lambda deadline is a success
// (the rest goes the next day); the Lambda's own context ending is not.
func TestCleanupHandleStopsAtTheMarginWithoutFailing(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	var out bytes.Buffer
	// A deadline already inside the margin: Cleanup sees a done context
	// while the invocation still has half an hour.
	h := &CleanupHandler{margin: time.Hour, db: pool, cfg: CleanupConfig{}, metrics: metrics.ForEnvironment(&out, "test"),
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	if _, err := h.Handle(lctx); err != nil {
		t.Fatalf("stopping at the margin failed the invocation: %v", err)
	}
}
