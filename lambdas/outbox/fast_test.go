package outbox

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/postgres"
)

// One claim of the default size takes a backlog of 250 rows at once and
// sends it as 25 PutEvents calls of at most 10 entries.
func TestBigBatchIsSplitIntoCallsOfTen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	writeOrders(t, pool, 0, 250)
	sink := newFakeSink()
	p, err := NewPublisher(pool, sink, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PublishOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	accepted, _ := sink.snapshot()
	if res.Claimed != 250 || res.Published != 250 || len(accepted) != 250 {
		t.Fatalf("one round claimed %d, marked %d, delivered %d; want 250 each", res.Claimed, res.Published, len(accepted))
	}
	if sink.calls != 25 || sink.maxBatch != MaxEntriesPerCall {
		t.Fatalf("%d calls, largest %d entries; want 25 calls of %d", sink.calls, sink.maxBatch, MaxEntriesPerCall)
	}
}

// syncCommitSpy wraps the pool and, before every statement the publisher
// runs inside a transaction, reads synchronous_commit in that same
// transaction.
type syncCommitSpy struct {
	DB
	mu   sync.Mutex
	seen map[string]string // first line of the statement -> synchronous_commit
}

func (s *syncCommitSpy) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := s.DB.Begin(ctx)
	return &spyTx{Tx: tx, spy: s}, err
}

func (s *syncCommitSpy) note(ctx context.Context, tx pgx.Tx, sql string) {
	if sql == asyncCommitSQL {
		return
	}
	var v string
	if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&v); err != nil {
		v = "error: " + err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[strings.TrimSpace(sql)[:20]] = v
}

type spyTx struct {
	pgx.Tx
	spy *syncCommitSpy
}

func (t *spyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	t.spy.note(ctx, t.Tx, sql)
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *spyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	t.spy.note(ctx, t.Tx, sql)
	return t.Tx.Query(ctx, sql, args...)
}

// The claim, the marks and the failure records commit asynchronously; the
// setting ends with the publisher's transaction, so the shop's order
// transactions on the same pooled connection still commit synchronously.
func TestAsyncCommitOnlyForThePublishersStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t, testDB)
	pool := newPool(t, testDB, schema, 1) // one connection: the shop reuses the publisher's
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	writeOrders(t, pool, 0, 12)
	sink := newFakeSink()
	sink.reject = func(d sinkDetail, _ int) string {
		if strings.HasSuffix(d.AggregateID, "3") {
			return "MalformedDetail"
		}
		return ""
	}
	spy := &syncCommitSpy{DB: pool, seen: map[string]string{}}
	p, err := NewPublisher(spy, sink, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := p.PublishOnce(ctx); err != nil || res.Published != 11 || res.Parked != 1 {
		t.Fatalf("round: %+v, %v; want 11 published and 1 parked", res, err)
	}
	want := map[string]string{
		strings.TrimSpace(claimSQL)[:20]:         "off",
		strings.TrimSpace(markPublishedSQL)[:20]: "off",
		strings.TrimSpace(markFailedSQL)[:20]:    "off",
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	for stmt, v := range want {
		if spy.seen[stmt] != v {
			t.Errorf("synchronous_commit during %q = %q, want %q (seen %v)", stmt, spy.seen[stmt], v, spy.seen)
		}
	}
	var after string
	if err := pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != "on" {
		t.Fatalf("synchronous_commit on the pooled connection after a round = %q, want on", after)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&after); err != nil || after != "on" {
		t.Fatalf("synchronous_commit in a shop transaction = %q (%v), want on", after, err)
	}
}

// Run with a backlog of several full batches records the verdicts of a
// batch while it claims the next: every row is published exactly once,
// marked, and the totals add up when Run returns.
func TestRunOverlapsMarksWithTheNextClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	const n = 1000
	writeOrders(t, pool, 0, n)
	sink := newFakeSink()
	cfg := testConfig()
	cfg.BatchSize = 100
	p, err := NewPublisher(pool, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx, nil) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if a, _ := sink.snapshot(); len(a) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("backlog not delivered within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	accepted, _ := sink.snapshot()
	for id, k := range accepted {
		if k != 1 {
			t.Fatalf("event %s delivered %d times without a crash", id, k)
		}
	}
	var unpublished, leased int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE publicado_en IS NULL), count(*) FILTER (WHERE bloqueado_por IS NOT NULL) FROM outbox`).Scan(&unpublished, &leased); err != nil {
		t.Fatal(err)
	}
	if tot := p.Totals(); unpublished != 0 || leased != 0 || tot.Published != n || tot.Claimed != n {
		t.Fatalf("after Run: %d unpublished, %d leased, totals %+v; want everything published and counted", unpublished, leased, tot)
	}
}

// The functions run with QueryExecModeExec (no named prepared statements,
// for RDS Proxy): migrations, Add, a publish round and the gauges must all
// work in that mode.
func TestEverythingWorksInTheProxyFriendlyExecMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t, testDB)
	pc, err := postgres.PoolConfigFromSecret(`{"username":"postgres","password":"","host":"127.0.0.1","port":5432,"dbname":"`+testDB+`"}`, postgres.ConnectConfig{SSLMode: "disable"})
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	writeOrders(t, pool, 0, 15)
	sink := newFakeSink()
	p, err := NewPublisher(pool, sink, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, p, 10*time.Second)
	if a, _ := sink.snapshot(); len(a) != 15 {
		t.Fatalf("%d published in exec mode, want 15", len(a))
	}
	if n, err := Cleanup(ctx, pool, CleanupConfig{}); err != nil || n != 0 {
		t.Fatalf("Cleanup in exec mode = %d, %v", n, err)
	}
}
