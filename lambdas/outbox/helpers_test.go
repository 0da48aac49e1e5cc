package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	testDB     = "mf_outbox_test"
	testSinkDB = "mf_outbox_test_sink"
)

// dsn is the connection string of db with schema as search_path.
func dsn(db, schema string) string { return localaws.PostgresDSN(db, schema) }

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	for _, db := range []string{testDB, testSinkDB} {
		if err := localaws.EnsureDatabase(ctx, db); err != nil {
			fmt.Fprintln(os.Stderr, "outbox tests need PostgreSQL:", err)
			os.Exit(1)
		}
	}
	cancel()
	os.Exit(m.Run())
}

// newSchema creates a private schema in db, dropped when the test ends.
// Tests run in parallel, each in its own schema.
func newSchema(t testing.TB, db string) string { return localaws.NewSchema(t, db, "t_") }

// newPool opens a pool on db/schema, closed when the test ends.
func newPool(t testing.TB, db, schema string, maxConns int32) *pgxpool.Pool {
	return localaws.NewPool(t, db, schema, maxConns)
}

// migratedPool returns a pool on a fresh, migrated schema.
func migratedPool(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	schema := newSchema(t, testDB)
	pool := newPool(t, testDB, schema, 8)
	if _, err := Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool, schema
}

// writeOrders writes n orders, each with its PedidoCreado event, in one
// transaction per order, as the shop does.
func writeOrders(t testing.TB, db DB, from, n int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		if err := writeOrder(ctx, db, i); err != nil {
			t.Fatal(err)
		}
	}
}

func orderID(i int) string { return fmt.Sprintf("ped-%06d", i) }

func writeOrder(ctx context.Context, db DB, i int) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	id := orderID(i)
	if _, err := tx.Exec(ctx, `INSERT INTO pedidos (pedido_id, cliente_id, lineas, total_centimos) VALUES ($1, 'cli-1', '[]', 4820)`, id); err != nil {
		return err
	}
	payload := fmt.Sprintf(`{"version":1,"pedido_id":%q,"total_centimos":4820}`, id)
	if _, err := Add(ctx, tx, Event{AggregateID: id, Type: "PedidoCreado", Payload: json.RawMessage(payload)}); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func testConfig() Config {
	return Config{
		BusName:        "bus-mercadofresco",
		Source:         "mercadofresco.tienda",
		RetryBaseDelay: time.Millisecond,
		RetryMaxDelay:  5 * time.Millisecond,
		PollInterval:   20 * time.Millisecond,
	}
}

// fakeSink is an in-memory EventBridge. reject decides per entry and per
// delivery attempt of that entry ("" accepts); callErr may fail a whole
// call. It records everything it accepted.
type fakeSink struct {
	mu       sync.Mutex
	calls    int
	entries  int
	seen     map[string]int // id_evento -> entries received
	accepted map[string]int // id_evento -> entries accepted
	details  map[string]string
	maxBatch int
	maxBytes int
	reject   func(d sinkDetail, attempt int) (code string)
	callErr  func(call int, ds []sinkDetail) error
}

// sinkDetail is a received detail: its metadata and its raw JSON.
type sinkDetail struct {
	Detail
	raw string
}

func newFakeSink() *fakeSink {
	return &fakeSink{seen: map[string]int{}, accepted: map[string]int{}, details: map[string]string{}}
}

func (s *fakeSink) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ds := make([]sinkDetail, len(in.Entries))
	total := 0
	for i, e := range in.Entries {
		ds[i].raw = aws.ToString(e.Detail)
		if err := json.Unmarshal([]byte(ds[i].raw), &ds[i].Detail); err != nil {
			return nil, fmt.Errorf("fake sink: bad detail: %w", err)
		}
		total += EntrySize(e)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(in.Entries) > MaxEntriesPerCall || total > MaxEntryBytes {
		return nil, fmt.Errorf("fake sink: call of %d entries / %d bytes breaks the PutEvents limits", len(in.Entries), total)
	}
	s.maxBatch = max(s.maxBatch, len(in.Entries))
	s.maxBytes = max(s.maxBytes, total)
	if s.callErr != nil {
		if err := s.callErr(s.calls, ds); err != nil {
			return nil, err
		}
	}
	out := &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}
	for i, d := range ds {
		s.entries++
		s.seen[d.EventID]++
		code := ""
		if s.reject != nil {
			code = s.reject(d, s.seen[d.EventID])
		}
		if code != "" {
			out.FailedEntryCount++
			out.Entries[i] = types.PutEventsResultEntry{ErrorCode: aws.String(code), ErrorMessage: aws.String("fake rejection")}
			continue
		}
		s.accepted[d.EventID]++
		s.details[d.EventID] = aws.ToString(in.Entries[i].Detail)
		out.Entries[i] = types.PutEventsResultEntry{EventId: aws.String("eb-" + d.EventID)}
	}
	return out, nil
}

func (s *fakeSink) snapshot() (accepted map[string]int, seen map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, b := map[string]int{}, map[string]int{}
	for k, v := range s.accepted {
		a[k] = v
	}
	for k, v := range s.seen {
		b[k] = v
	}
	return a, b
}

// drain runs rounds until a round claims nothing or the deadline passes.
func drain(t testing.TB, p *Publisher, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		res, err := p.PublishOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res.Claimed == 0 {
			g, err := ReadGauges(context.Background(), p.db)
			if err != nil {
				t.Fatal(err)
			}
			if g.Pending == 0 {
				return
			}
			time.Sleep(5 * time.Millisecond) // rows in backoff
		}
	}
	var pending, backedOff int
	var lastError string
	_ = p.db.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE bloqueado_hasta > now()), coalesce(max(ultimo_error), '')
		FROM outbox WHERE publicado_en IS NULL AND aparcado_en IS NULL`).Scan(&pending, &backedOff, &lastError)
	t.Fatalf("outbox not drained within %s: %d rows pending, %d of them leased or backed off; an error: %q", within, pending, backedOff, lastError)
}

func outboxIDs(t testing.TB, db DB) map[string]string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT id::text, agregado_id FROM outbox`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var a [2]string
		return a, r.Scan(&a[0], &a[1])
	})
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string, len(ids))
	for _, a := range ids {
		m[a[0]] = a[1]
	}
	return m
}

// expireLeases ends every lease and backoff now, as the passing of time
// would (the lease clock is the database's now(), which tests cannot
// advance).
func expireLeases(t testing.TB, db DB) {
	t.Helper()
	if _, err := db.Exec(context.Background(), `UPDATE outbox SET bloqueado_hasta = now() - interval '1 millisecond' WHERE bloqueado_hasta IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
}
