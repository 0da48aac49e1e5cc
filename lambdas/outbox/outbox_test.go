package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
)

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t, testDB)
	pool := newPool(t, testDB, schema, 8)
	migs, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) < 3 || migs[0].Version != 1 {
		t.Fatalf("embedded migrations = %+v", migs)
	}
	// Four migrators at once (two deploys racing): every migration applied
	// exactly once in total.
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied, err := Migrate(ctx, pool)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += len(applied)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != len(migs) {
		t.Fatalf("concurrent migrators applied %d migrations in total, want %d", total, len(migs))
	}
	again, err := Migrate(ctx, pool)
	if err != nil || len(again) != 0 {
		t.Fatalf("second Migrate = %v, %v; want nothing applied", again, err)
	}
	// An applied migration edited afterwards is refused.
	if _, err := pool.Exec(ctx, `UPDATE outbox_migraciones SET checksum = 'deadbeefdeadbeef' WHERE version = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ctx, pool); !errors.Is(err, ErrMigrationChanged) {
		t.Fatalf("Migrate after tampering = %v, want ErrMigrationChanged", err)
	}
}

func TestAddValidates(t *testing.T) {
	t.Parallel()
	pool, _ := migratedPool(t)
	big := `{"x":"` + strings.Repeat("a", MaxEntryBytes) + `"}`
	tests := []struct {
		name string
		ev   Event
		want error
	}{
		{"ok", Event{AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(`{"version":1}`)}, nil},
		{"ok with leading space", Event{AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(" {\"version\":1}")}, nil},
		{"empty type", Event{AggregateID: "ped-1", Payload: json.RawMessage(`{}`)}, ErrInvalidEvent},
		{"empty aggregate", Event{Type: "PedidoCreado", Payload: json.RawMessage(`{}`)}, ErrInvalidEvent},
		{"not json", Event{AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(`{"a":`)}, ErrInvalidEvent},
		{"array", Event{AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(`[1]`)}, ErrInvalidEvent},
		{"reserved key", Event{AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(`{"id_evento":"mine"}`)}, ErrInvalidEvent},
		{"too large", Event{AggregateID: "ped-1", Type: "PedidoCreado", Payload: json.RawMessage(big)}, ErrEventTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			id, err := Add(ctx, tx, tc.ev)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Add error = %v, want %v", err, tc.want)
			}
			if tc.want == nil && id.Version() != 7 {
				t.Fatalf("generated id %s is not a UUIDv7", id)
			}
		})
	}
	if _, err := Add(context.Background(), nil, Event{}); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("Add(nil tx) = %v", err)
	}
}

func TestAddIsAtomicWithTheCallersTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	ev := func(id string) Event {
		return Event{AggregateID: id, Type: "PedidoCreado", Payload: json.RawMessage(`{"version":1}`)}
	}
	// Rolled back: neither the order nor the event exist.
	tx, _ := pool.Begin(ctx)
	_, _ = tx.Exec(ctx, `INSERT INTO pedidos (pedido_id, cliente_id, lineas, total_centimos) VALUES ('ped-r', 'c', '[]', 1)`)
	if _, err := Add(ctx, tx, ev("ped-r")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Committed: both, and the caller-chosen id is kept.
	want := uuid.New()
	tx, _ = pool.Begin(ctx)
	_, _ = tx.Exec(ctx, `INSERT INTO pedidos (pedido_id, cliente_id, lineas, total_centimos) VALUES ('ped-c', 'c', '[]', 1)`)
	e := ev("ped-c")
	e.ID = want
	got, err := Add(ctx, tx, e)
	if err != nil || got != want {
		t.Fatalf("Add = %s, %v; want %s", got, err, want)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var orders, events int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pedidos), (SELECT count(*) FROM outbox WHERE id = $1::uuid AND agregado_id = 'ped-c')`, want.String()).Scan(&orders, &events); err != nil {
		t.Fatal(err)
	}
	if orders != 1 || events != 1 {
		t.Fatalf("after rollback+commit: %d orders, %d matching events; want 1 and 1", orders, events)
	}
}

func TestEntrySize(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name  string
		entry types.PutEventsRequestEntry
		want  int
	}{
		{"no time", types.PutEventsRequestEntry{Source: aws.String("src"), DetailType: aws.String("T"), Detail: aws.String("{}")}, 6},
		{"time counts 14", types.PutEventsRequestEntry{Source: aws.String("src"), DetailType: aws.String("T"), Detail: aws.String("{}"), Time: &now}, 20},
		{"utf8 bytes not runes", types.PutEventsRequestEntry{Source: aws.String("s"), DetailType: aws.String("Ñ"), Detail: aws.String(`{"a":"€"}`)}, 1 + 2 + 11},
		{"resources count, bus and trace do not", types.PutEventsRequestEntry{Source: aws.String("s"), DetailType: aws.String("t"),
			Resources: []string{"arn:1", "ab"}, EventBusName: aws.String("bus-mercadofresco"), TraceHeader: aws.String("Root=1")}, 9},
		{"invalid utf8 counted as replacement char", types.PutEventsRequestEntry{Source: aws.String("s"), DetailType: aws.String("t"), Detail: aws.String("\xff")}, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := EntrySize(tc.entry); got != tc.want {
				t.Fatalf("EntrySize = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPack(t *testing.T) {
	t.Parallel()
	rep := func(n, size int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = size
		}
		return s
	}
	tests := []struct {
		name     string
		sizes    []int
		calls    []int // entries per call
		tooLarge []int
	}{
		{"empty", nil, nil, nil},
		{"ten per call", rep(25, 100), []int{10, 10, 5}, nil},
		{"bytes limit", rep(5, 100*1024), []int{2, 2, 1}, nil},
		{"exactly the limit fits", []int{MaxEntryBytes}, []int{1}, nil},
		{"oversize skipped, order kept", []int{10, MaxEntryBytes + 1, 10}, []int{2}, []int{1}},
		{"mixed", []int{200 * 1024, 60 * 1024, 1, 1}, []int{1, 3}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls, tooLarge := pack(tc.sizes, MaxEntriesPerCall, MaxEntryBytes)
			var got []int
			next := 0
			for _, c := range calls {
				got = append(got, len(c))
				total := 0
				for _, i := range c {
					for next < len(tc.sizes) && tc.sizes[next] > MaxEntryBytes {
						next++
					}
					if i != next {
						t.Fatalf("order not kept: got index %d, want %d", i, next)
					}
					next++
					total += tc.sizes[i]
				}
				if total > MaxEntryBytes || len(c) > MaxEntriesPerCall {
					t.Fatalf("call breaks limits: %d entries, %d bytes", len(c), total)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.calls) || fmt.Sprint(tooLarge) != fmt.Sprint(tc.tooLarge) {
				t.Fatalf("pack = %v / %v, want %v / %v", got, tooLarge, tc.calls, tc.tooLarge)
			}
		})
	}
}

func TestPublisherPublishesOnceAndMarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	writeOrders(t, pool, 0, 250)
	sink := newFakeSink()
	p, err := NewPublisher(pool, sink, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, p, 30*time.Second)
	accepted, _ := sink.snapshot()
	ids := outboxIDs(t, pool)
	if len(accepted) != 250 || len(ids) != 250 {
		t.Fatalf("accepted %d distinct events from %d rows, want 250", len(accepted), len(ids))
	}
	for id, n := range accepted {
		if n != 1 {
			t.Fatalf("event %s published %d times without any crash", id, n)
		}
		var d Detail
		if err := json.Unmarshal([]byte(sink.details[id]), &d); err != nil {
			t.Fatal(err)
		}
		var payload struct {
			Version  int    `json:"version"`
			PedidoID string `json:"pedido_id"`
		}
		_ = json.Unmarshal([]byte(sink.details[id]), &payload)
		if d.EventID != id || ids[id] != d.AggregateID || payload.PedidoID != d.AggregateID || payload.Version != 1 {
			t.Fatalf("detail %s does not carry its outbox row", sink.details[id])
		}
	}
	if sink.maxBatch != MaxEntriesPerCall {
		t.Fatalf("largest call had %d entries, want %d", sink.maxBatch, MaxEntriesPerCall)
	}
	var unpublished, leased int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE publicado_en IS NULL), count(*) FILTER (WHERE bloqueado_por IS NOT NULL) FROM outbox`).Scan(&unpublished, &leased); err != nil {
		t.Fatal(err)
	}
	if unpublished != 0 || leased != 0 {
		t.Fatalf("%d rows unpublished and %d still leased after drain", unpublished, leased)
	}
}

func TestNewPublisherRejectsBadConfig(t *testing.T) {
	t.Parallel()
	sink := newFakeSink()
	pool, _ := migratedPool(t)
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"no bus", func(c *Config) { c.BusName = "" }},
		{"no source", func(c *Config) { c.Source = "" }},
		{"timeout not below lease", func(c *Config) { c.Lease = time.Second; c.PublishTimeout = time.Second }},
		{"batch too big", func(c *Config) { c.BatchSize = 100000 }},
		{"negative retries", func(c *Config) { c.EntryRetries = -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.mod(&cfg)
			if _, err := NewPublisher(pool, sink, cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewPublisher = %v, want ErrInvalidConfig", err)
			}
		})
	}
	if _, err := NewPublisher(nil, sink, testConfig()); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("nil db accepted: %v", err)
	}
}

func TestPartialFailureRetriesOnlyFailedEntries(t *testing.T) {
	t.Parallel()
	pool, _ := migratedPool(t)
	writeOrders(t, pool, 0, 200)
	sink := newFakeSink()
	// Every third event fails its first two deliveries (InternalFailure /
	// ThrottlingException), as PutEvents reports with FailedEntryCount.
	sink.reject = func(d sinkDetail, attempt int) string {
		if d.EventID[len(d.EventID)-1]%3 == 0 && attempt <= 2 {
			if attempt == 1 {
				return "InternalFailure"
			}
			return "ThrottlingException"
		}
		return ""
	}
	p, err := NewPublisher(pool, sink, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	drain(t, p, 30*time.Second)
	accepted, seen := sink.snapshot()
	if len(accepted) != 200 {
		t.Fatalf("%d events accepted, want 200", len(accepted))
	}
	retried := 0
	for id, n := range accepted {
		if n != 1 {
			t.Fatalf("event %s accepted %d times: a successful entry was re-sent", id, n)
		}
		if seen[id] > 1 {
			retried++
		}
	}
	if retried == 0 {
		t.Fatal("no entry was retried: the fake did not inject failures")
	}
	// Total entries sent = one per event + one per injected failure: only
	// the failed entries were re-sent.
	want := 200 + 2*retried
	if sink.entries != want {
		t.Fatalf("sink received %d entries, want %d (200 + 2 per failing event)", sink.entries, want)
	}
	if g, _ := ReadGauges(context.Background(), pool); g.Parked != 0 {
		t.Fatalf("%d rows parked by transient entry failures", g.Parked)
	}
}

func TestPoisonRowsAreParkedAndDoNotStallOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	// Poison first, so it sits at the head of ORDER BY creado_en.
	poison := map[string]string{
		"too-large": `{"version":1,"relleno":"` + strings.Repeat("x", MaxEntryBytes-100) + `"}`,
		"malformed": `{"version":1,"veneno":"permanente"}`,
		"transient": `{"version":1,"veneno":"siempre-falla"}`,
		"request":   `{"version":1,"veneno":"peticion"}`,
	}
	for agg, payload := range poison {
		if _, err := pool.Exec(ctx, `INSERT INTO outbox (id, agregado_id, tipo, payload, creado_en) VALUES ($1::uuid, $2, 'PedidoCreado', $3::jsonb, now() - interval '1 hour')`,
			uuid.NewString(), agg, payload); err != nil {
			t.Fatal(err)
		}
	}
	writeOrders(t, pool, 0, 95)
	sink := newFakeSink()
	sink.reject = func(d sinkDetail, _ int) string {
		switch {
		case strings.Contains(d.raw, "permanente"):
			return "MalformedDetail"
		case strings.Contains(d.raw, "siempre-falla"):
			return "InternalFailure"
		}
		return ""
	}
	// An entry that makes EventBridge refuse the whole request: the
	// publisher must bisect to it and publish its call-mates.
	sink.callErr = func(_ int, ds []sinkDetail) error {
		for _, d := range ds {
			if strings.Contains(d.raw, `"peticion"`) {
				return &smithy.GenericAPIError{Code: "ValidationException", Message: "fake: invalid entry", Fault: smithy.FaultClient}
			}
		}
		return nil
	}
	cfg := testConfig()
	cfg.MaxAttempts = 3
	p, err := NewPublisher(pool, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The first round already publishes the healthy rows behind the poison.
	res, err := p.PublishOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Published != 95 {
		t.Fatalf("first round published %d, want all 95 healthy rows despite the poison at the head", res.Published)
	}
	drain(t, p, 30*time.Second)

	rows, err := pool.Query(ctx, `SELECT agregado_id, intentos, coalesce(ultimo_error, '') FROM outbox WHERE aparcado_en IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	type parked struct {
		attempts int
		err      string
	}
	got := map[string]parked{}
	for rows.Next() {
		var agg string
		var pk parked
		if err := rows.Scan(&agg, &pk.attempts, &pk.err); err != nil {
			t.Fatal(err)
		}
		got[agg] = pk
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	wantErr := map[string]string{"too-large": "larger than the EventBridge entry limit", "malformed": "MalformedDetail", "transient": "InternalFailure", "request": "ValidationException"}
	for agg, frag := range wantErr {
		pk, ok := got[agg]
		if !ok {
			t.Fatalf("poison row %s not parked (parked: %v)", agg, got)
		}
		if !strings.Contains(pk.err, frag) {
			t.Fatalf("parked %s has error %q, want it to mention %q", agg, pk.err, frag)
		}
	}
	if got["transient"].attempts != cfg.MaxAttempts {
		t.Fatalf("retryable poison parked after %d attempts, want MaxAttempts=%d", got["transient"].attempts, cfg.MaxAttempts)
	}
	if got["malformed"].attempts != 1 || got["too-large"].attempts != 1 {
		t.Fatalf("unretryable poison should park at the first attempt: %+v", got)
	}
	if len(got) != 4 {
		t.Fatalf("%d rows parked, want exactly the 4 poison rows", len(got))
	}
	g, err := ReadGauges(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if g.Pending != 0 || g.Parked != 4 {
		t.Fatalf("gauges = %+v, want 0 pending, 4 parked", g)
	}
	accepted, _ := sink.snapshot()
	if len(accepted) != 95 {
		t.Fatalf("%d events accepted, want 95", len(accepted))
	}
}

func TestOutageDoesNotConsumeAttempts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	writeOrders(t, pool, 0, 30)
	sink := newFakeSink()
	down := true
	var mu sync.Mutex
	sink.callErr = func(int, []sinkDetail) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "fake outage", Fault: smithy.FaultServer}
		}
		return nil
	}
	cfg := testConfig()
	cfg.MaxAttempts = 2
	p, err := NewPublisher(pool, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 6 { // three times MaxAttempts worth of failed rounds
		if _, err := p.PublishOnce(ctx); err != nil {
			t.Fatal(err)
		}
		expireLeases(t, pool) // the backoff has passed
	}
	var parked, maxAttempts int
	var lastErr string
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE aparcado_en IS NOT NULL), max(intentos), max(coalesce(ultimo_error, '')) FROM outbox`).Scan(&parked, &maxAttempts, &lastErr); err != nil {
		t.Fatal(err)
	}
	if parked != 0 || maxAttempts != 0 || !strings.Contains(lastErr, "fake outage") {
		t.Fatalf("after an outage: %d parked, max intentos %d, error %q; want 0, 0 and the outage recorded", parked, maxAttempts, lastErr)
	}
	mu.Lock()
	down = false
	mu.Unlock()
	drain(t, p, 30*time.Second)
	if accepted, _ := sink.snapshot(); len(accepted) != 30 {
		t.Fatalf("%d published after recovery, want 30", len(accepted))
	}
}

// A publisher that claimed and died: its rows stay invisible until the
// lease runs out, then another publisher publishes them.
func TestExpiredLeaseIsReclaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	writeOrders(t, pool, 0, 20)
	// The "dead" publisher: claims everything with a 1 s lease and never
	// comes back.
	if _, err := pool.Exec(ctx, claimSQL, 100, 1000, uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	sink := newFakeSink()
	p, err := NewPublisher(pool, sink, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PublishOnce(ctx)
	if err != nil || res.Claimed != 0 {
		t.Fatalf("claimed %d rows under a live lease (err %v), want 0", res.Claimed, err)
	}
	expireLeases(t, pool) // the dead publisher's lease runs out
	drain(t, p, 10*time.Second)
	var attempts int
	if err := pool.QueryRow(ctx, `SELECT min(intentos) FROM outbox`).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if accepted, _ := sink.snapshot(); len(accepted) != 20 || attempts != 2 {
		t.Fatalf("%d re-claimed events published, intentos %d; want 20 and 2 (the crash counts)", len(accepted), attempts)
	}
}

func TestParallelPublishersNeverPublishTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema := migratedPool(t)
	const n = 2000
	writeOrders(t, pool, 0, n/2)
	sink := newFakeSink()
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 4 {
		pp := newPool(t, testDB, schema, 4) // separate pools: separate "processes"
		cfg := testConfig()
		cfg.BatchSize = 50
		p, err := NewPublisher(pp, sink, cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Run(cctx, nil) }()
	}
	writeOrders(t, pool, n/2, n/2) // more orders while they run
	deadline := time.Now().Add(60 * time.Second)
	for {
		if accepted, _ := sink.snapshot(); len(accepted) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("publishers did not publish everything in time")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	accepted, _ := sink.snapshot()
	for id, c := range accepted {
		if c != 1 {
			t.Fatalf("event %s published %d times by concurrent live publishers", id, c)
		}
	}
}

func TestCleanupKeepsUnpublishedRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	ins := func(n int, agg, publishedAgo, parked string) {
		for range n {
			q := `INSERT INTO outbox (id, agregado_id, tipo, payload, creado_en, publicado_en, aparcado_en)
			      VALUES ($1::uuid, $2, 'PedidoCreado', '{}', now() - interval '30 days', ` + publishedAgo + `, ` + parked + `)`
			if _, err := pool.Exec(ctx, q, uuid.NewString(), agg); err != nil {
				t.Fatal(err)
			}
		}
	}
	ins(25, "old-published", "now() - interval '8 days'", "NULL")
	ins(5, "recent-published", "now() - interval '6 days'", "NULL")
	ins(4, "old-unpublished", "NULL", "NULL")
	ins(3, "old-parked", "NULL", "now() - interval '20 days'")

	// Bounded: MaxBatches=2 of 10 deletes 20, the next run the rest.
	n, err := Cleanup(ctx, pool, CleanupConfig{BatchSize: 10, MaxBatches: 2})
	if err != nil || n != 20 {
		t.Fatalf("bounded Cleanup = %d, %v; want 20", n, err)
	}
	n, err = Cleanup(ctx, pool, CleanupConfig{BatchSize: 10})
	if err != nil || n != 5 {
		t.Fatalf("second Cleanup = %d, %v; want 5", n, err)
	}
	rows, err := pool.Query(ctx, `SELECT agregado_id, count(*) FROM outbox GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]int{}
	for rows.Next() {
		var a string
		var c int
		_ = rows.Scan(&a, &c)
		left[a] = c
	}
	want := map[string]int{"recent-published": 5, "old-unpublished": 4, "old-parked": 3}
	if fmt.Sprint(left) != fmt.Sprint(want) {
		t.Fatalf("rows left = %v, want %v", left, want)
	}
	if _, err := Cleanup(ctx, pool, CleanupConfig{BatchSize: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("negative batch accepted: %v", err)
	}
}

func TestGaugesAndRunEmitMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO outbox (id, agregado_id, tipo, payload, creado_en) VALUES
		($1::uuid, 'a', 'T', '{}', now() - interval '90 seconds'),
		($2::uuid, 'b', 'T', '{}', now() - interval '10 seconds')`, uuid.NewString(), uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	g, err := ReadGauges(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if g.Pending != 2 || g.OldestPendingAge < 89*time.Second || g.OldestPendingAge > 120*time.Second {
		t.Fatalf("gauges = %+v, want 2 pending, oldest ~90 s", g)
	}
	var buf localaws.Buffer
	cfg := testConfig()
	cfg.Metrics = metrics.ForEnvironment(&buf, "test")
	sink := newFakeSink()
	p, err := NewPublisher(pool, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx, nil) }()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if a, _ := sink.snapshot(); len(a) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not publish the 2 rows")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want a metrics line at start and one at exit, got %q", buf.String())
	}
	var first, last map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if first[lambdaapi.MetricOutboxPending] != 2.0 || first[lambdaapi.MetricOutboxOldestAge].(float64) < 89 {
		t.Fatalf("first metrics line = %s", lines[0])
	}
	if last[lambdaapi.MetricOutboxPending] != 0.0 || last[lambdaapi.MetricOutboxPublished] != 2.0 {
		t.Fatalf("last metrics line = %s, want 0 pending and 2 published", lines[len(lines)-1])
	}
}

// With LISTEN/NOTIFY the publisher wakes at commit instead of after its
// (here deliberately huge) poll interval.
func TestListenWakesThePublisher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema := migratedPool(t)
	// Order 0 is written before LISTEN, so its NOTIFY is not seen: the
	// publisher's first round publishes it, then (PollInterval one hour,
	// batch not full) only a notification can start another round.
	writeOrders(t, pool, 0, 1)
	conn, err := pgx.Connect(ctx, dsn(testDB, schema))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	wake, stop, err := Listen(rctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer stop() // before conn.Close: the listener owns conn until then
	sink := newFakeSink()
	cfg := testConfig()
	cfg.PollInterval = time.Hour
	p, err := NewPublisher(pool, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(rctx, wake) }()
	waitPublished(t, rctx, sink, 1, "the first round did not publish order 0")
	// The first round has claimed and sent order 0, so it cannot take
	// order 1: only the NOTIFY of order 1's commit can publish it now.
	writeOrders(t, pool, 1, 1)
	waitPublished(t, rctx, sink, 2, "publisher was not woken by NOTIFY")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// Stopping the listener ends its goroutine and closes the wake channel
// before returning, so the caller owns the connection again.
func TestListenStopReleasesTheConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, schema := migratedPool(t)
	conn, err := pgx.Connect(ctx, dsn(testDB, schema))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	wake, stop, err := Listen(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	// NOTIFY is database-wide: a commit of a parallel test (another schema)
	// may have left its one coalesced value in the buffer before stop. After
	// that value the channel must be closed, without blocking.
	values := 0
	for closed := false; !closed; {
		select {
		case _, ok := <-wake:
			if closed = !ok; ok {
				values++
			}
		default:
			t.Fatal("wake still open after stop returned")
		}
	}
	if values > 1 {
		t.Fatalf("wake delivered %d values after stop, more than its one buffered value", values)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("connection unusable after stop: %v", err)
	}
}

// waitPublished waits until sink holds n events, failing with msg when ctx
// ends first. It polls the in-memory sink, not the system under test.
func waitPublished(t *testing.T, ctx context.Context, sink *fakeSink, n int, msg string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if a, _ := sink.snapshot(); len(a) >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal(msg)
		case <-tick.C:
		}
	}
}

func TestEncodeDetail(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 30, 15, 4, 5, 123456000, time.FixedZone("x", 3600))
	tests := []struct {
		name    string
		payload string
		want    map[string]any
	}{
		{"jsonb text", `{"a": [1, 2], "version": 1}`, map[string]any{"a": []any{1.0, 2.0}, "version": 1.0}},
		{"empty object", `{}`, map[string]any{}},
		{"spaces", "  { \"x\" : {\"y\": null} }  ", map[string]any{"x": map[string]any{"y": nil}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := claimedRow{id: uuid.NewString(), aggregateID: "ped-\"1\"<ñ>", payload: tc.payload, createdAt: created}
			raw := encodeDetail(r, "")
			var got map[string]any
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatalf("not JSON: %v: %s", err, raw)
			}
			var meta Detail
			_ = json.Unmarshal([]byte(raw), &meta)
			if meta.EventID != r.id || meta.AggregateID != r.aggregateID || !meta.CreatedAt.Equal(created) {
				t.Fatalf("metadata %+v from %s", meta, raw)
			}
			for _, k := range ReservedDetailKeys {
				delete(got, k)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("payload members %v, want %v", got, tc.want)
			}
		})
	}
}

// Regression: the failure text stored in ultimo_error was cut at 2,000
// bytes inside a multi-byte character; PostgreSQL refused the invalid UTF-8,
// the verdict was never recorded, and the batch was republished forever.
func TestLongMultibyteErrorIsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	writeOrders(t, pool, 0, 1)
	sink := newFakeSink()
	// "PutEvents call failed: " is 23 bytes; 1,976 more put a 3-byte "€"
	// across the 2,000-byte limit.
	msg := strings.Repeat("a", 1976) + strings.Repeat("€", 20) + "\x00"
	sink.callErr = func(int, []sinkDetail) error { return errors.New(msg) }
	p, err := NewPublisher(pool, sink, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PublishOnce(ctx)
	if err != nil {
		t.Fatalf("verdict not recorded: %v", err)
	}
	if res.Failed != 1 {
		t.Fatalf("result %+v, want 1 failed", res)
	}
	var stored string
	if err := pool.QueryRow(ctx, `SELECT ultimo_error FROM outbox`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if len(stored) > maxErrorBytes || !utf8.ValidString(stored) || !strings.HasPrefix(stored, "PutEvents call failed: aaa") {
		t.Fatalf("stored error of %d bytes, valid UTF-8 %v: %.40q...", len(stored), utf8.ValidString(stored), stored)
	}
}

// Regression: Cleanup returned nil when its context ended, so a caller could
// not tell "nothing left to delete" from "stopped early".
func TestCleanupReportsItsContextError(t *testing.T) {
	t.Parallel()
	pool, _ := migratedPool(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n, err := Cleanup(ctx, pool, CleanupConfig{})
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Fatalf("Cleanup(cancelled) = %d, %v; want 0 and context.Canceled", n, err)
	}
}
