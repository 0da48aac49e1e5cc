package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The crash tests run real processes and kill them with SIGKILL: the test
// binary re-executes itself in a child role chosen by childRoleEnv. The
// "EventBridge" they publish to is a table in another database (the sink),
// so what a killed child managed to publish survives it, and publishing
// is not in the same transaction as the outbox.
const (
	childRoleEnv    = "OUTBOX_TEST_CHILD"
	childSchemaEnv  = "OUTBOX_TEST_SCHEMA"
	childSinkEnv    = "OUTBOX_TEST_SINK_SCHEMA"
	childFromEnv    = "OUTBOX_TEST_FROM"
	childToEnv      = "OUTBOX_TEST_TO"
	childDieAtEnv   = "OUTBOX_TEST_DIE_AT"
	roleNaiveWriter = "naive-writer"
	roleTxWriter    = "outbox-writer"
	rolePublisher   = "publisher"
)

// dbSink implements PutEventsAPI by inserting the call's entries into the
// sink table in one statement (a call is all-or-nothing, like a
// successful PutEvents), then waiting up to delay: the response's trip
// back over the network, during which a crash means "published, not marked".
type dbSink struct {
	pool  *pgxpool.Pool
	delay time.Duration
}

func (s dbSink) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	ids := make([]string, len(in.Entries))
	details := make([]string, len(in.Entries))
	for i, e := range in.Entries {
		var d Detail
		if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
			return nil, err
		}
		ids[i], details[i] = d.EventID, aws.ToString(e.Detail)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO recibidos (id_evento, detalle, pid)
		SELECT i::uuid, d, $3 FROM unnest($1::text[], $2::text[]) AS t(i, d)`, ids, details, os.Getpid()); err != nil {
		return nil, err
	}
	if s.delay > 0 {
		time.Sleep(rand.N(s.delay))
	}
	return &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}, nil
}

// naivePublish is the shop's old code path: one PutEvents per order, after
// the INSERT committed, with ~3 ms of network.
func naivePublish(ctx context.Context, sink *pgxpool.Pool, orderID string) error {
	time.Sleep(3 * time.Millisecond)
	_, err := sink.Exec(ctx, `INSERT INTO recibidos (id_evento, detalle, pid) VALUES (gen_random_uuid(), $1, $2)`,
		fmt.Sprintf(`{"agregado_id":%q}`, orderID), os.Getpid())
	return err
}

func newSinkSchema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	schema := newSchema(t, testSinkDB)
	pool := newPool(t, testSinkDB, schema, 4)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE recibidos (
		id_evento uuid NOT NULL, detalle text NOT NULL, pid int NOT NULL,
		recibido_en timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
		t.Fatal(err)
	}
	return pool, schema
}

func runChild(role string) int {
	ctx := context.Background()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "child", role, err); return 2 }
	pool, err := pgxpool.New(ctx, dsn(testDB, os.Getenv(childSchemaEnv)))
	if err != nil {
		return fail(err)
	}
	sink, err := pgxpool.New(ctx, dsn(testSinkDB, os.Getenv(childSinkEnv)))
	if err != nil {
		return fail(err)
	}
	from, _ := strconv.Atoi(os.Getenv(childFromEnv))
	to, _ := strconv.Atoi(os.Getenv(childToEnv))
	dieAt := -1
	if v := os.Getenv(childDieAtEnv); v != "" {
		dieAt, _ = strconv.Atoi(v)
	}
	dieIfAsked := func(i int) {
		if i == dieAt { // the deterministic crash: right after COMMIT
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	switch role {
	case rolePublisher:
		p, err := NewPublisher(pool, dbSink{pool: sink, delay: 4 * time.Millisecond}, Config{
			BusName: "bus-mercadofresco", Source: "mercadofresco.tienda",
			Lease: time.Second, PublishTimeout: 500 * time.Millisecond,
			PollInterval: 10 * time.Millisecond, MaxAttempts: 1000,
		})
		if err != nil {
			return fail(err)
		}
		_ = p.Run(ctx, nil) // until SIGKILL
		return 0
	case roleNaiveWriter:
		for i := from; i < to; i++ {
			// A SIGKILLed predecessor's last INSERT may commit after the
			// parent computed where to restart: skip orders that exist.
			tag, err := pool.Exec(ctx, `INSERT INTO pedidos (pedido_id, cliente_id, lineas, total_centimos) VALUES ($1, 'cli-1', '[]', 4820) ON CONFLICT DO NOTHING`, orderID(i))
			if err != nil {
				return fail(err)
			}
			if tag.RowsAffected() == 0 {
				continue
			}
			dieIfAsked(i)
			if err := naivePublish(ctx, sink, orderID(i)); err != nil {
				return fail(err)
			}
		}
		return 0
	case roleTxWriter:
		for i := from; i < to; i++ {
			var pgErr *pgconn.PgError
			if err := writeOrder(ctx, pool, i); errors.As(err, &pgErr) && pgErr.Code == "23505" {
				continue // committed by a killed predecessor, event included
			} else if err != nil {
				return fail(err)
			}
			dieIfAsked(i)
		}
		return 0
	}
	return fail(errors.New("unknown role"))
}

type childProc struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan error
}

func startChild(t testing.TB, role, schema, sinkSchema string, extra ...string) *childProc {
	t.Helper()
	c := &childProc{done: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childSchemaEnv+"="+schema, childSinkEnv+"="+sinkSchema)
	c.cmd.Env = append(c.cmd.Env, extra...)
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	return c
}

// kill SIGKILLs the child (if still running) and reports whether it was
// killed by us or by itself, failing the test on any other exit.
func (c *childProc) kill(t testing.TB) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	err := <-c.done
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled()) {
		t.Fatalf("child failed: %v: %s", err, c.stderr.String())
	}
}

// publisherChaos keeps `slots` publisher processes running, each SIGKILLed
// after a random 30-300 ms, until stop is closed; it returns the kills.
func publisherChaos(t *testing.T, slots int, schema, sinkSchema string, stop <-chan struct{}) (kills *atomic.Int64, wait func()) {
	kills = &atomic.Int64{}
	var wg sync.WaitGroup
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := startChild(t, rolePublisher, schema, sinkSchema)
				select {
				case <-time.After(30*time.Millisecond + rand.N(270*time.Millisecond)):
				case err := <-c.done:
					t.Errorf("publisher child exited by itself: %v: %s", err, c.stderr.String())
					return
				}
				c.kill(t)
				kills.Add(1)
			}
		}()
	}
	return kills, wg.Wait
}

func sinkEvents(t testing.TB, sink *pgxpool.Pool) (byID map[string]int, details map[string]map[string]bool, total int) {
	t.Helper()
	rows, err := sink.Query(context.Background(), `SELECT id_evento::text, detalle FROM recibidos`)
	if err != nil {
		t.Fatal(err)
	}
	byID, details = map[string]int{}, map[string]map[string]bool{}
	for rows.Next() {
		var id, d string
		if err := rows.Scan(&id, &d); err != nil {
			t.Fatal(err)
		}
		byID[id]++
		if details[id] == nil {
			details[id] = map[string]bool{}
		}
		details[id][d] = true
		total++
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return byID, details, total
}

// TestCrashChaos10000Orders: 10,000 orders are written (each order and its
// event in one transaction) while publisher processes are SIGKILLed at
// random points, dozens of times. Every event must reach the sink at least
// once, every duplicate must carry the same event id and content, and no
// order may end up with two different event ids or none.
func TestCrashChaos10000Orders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema := migratedPool(t)
	sink, sinkSchema := newSinkSchema(t)
	const orders = 10000
	const writers = 4

	stop := make(chan struct{})
	kills, waitChaos := publisherChaos(t, 2, schema, sinkSchema, stop)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < orders; i += writers {
				if err := writeOrder(ctx, pool, i); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for kills.Load() < 30 && !t.Failed() {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	waitChaos()
	if t.Failed() {
		return
	}
	// A last publisher that nobody kills finishes the job (including the
	// rows whose leases the killed ones left behind).
	final := startChild(t, rolePublisher, schema, sinkSchema)
	deadline := time.Now().Add(60 * time.Second)
	for {
		g, err := ReadGauges(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if g.Pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			final.kill(t)
			t.Fatalf("not drained: %+v", g)
		}
		time.Sleep(20 * time.Millisecond)
	}
	final.kill(t)

	rows := outboxIDs(t, pool)
	byID, details, total := sinkEvents(t, sink)
	perOrder := map[string]int{}
	for _, agg := range rows {
		perOrder[agg]++
	}
	if len(rows) != orders || len(perOrder) != orders {
		t.Fatalf("%d outbox rows for %d orders, want %d and %d", len(rows), len(perOrder), orders, orders)
	}
	for id := range rows {
		if byID[id] == 0 {
			t.Fatalf("event %s lost", id)
		}
	}
	dups := 0
	for id, n := range byID {
		if _, ok := rows[id]; !ok {
			t.Fatalf("sink got event %s that is not in the outbox", id)
		}
		if len(details[id]) != 1 {
			t.Fatalf("event %s delivered with %d different contents", id, len(details[id]))
		}
		dups += n - 1
	}
	var parked, unpublished int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE aparcado_en IS NOT NULL), count(*) FILTER (WHERE publicado_en IS NULL) FROM outbox`).Scan(&parked, &unpublished); err != nil {
		t.Fatal(err)
	}
	if parked != 0 || unpublished != 0 {
		t.Fatalf("%d parked, %d unpublished", parked, unpublished)
	}
	t.Logf("%d orders, %d publisher processes SIGKILLed, %d deliveries, %d crash-replay duplicates (same event id), 0 lost",
		orders, kills.Load(), total, dups)
}

// writeUnderKills runs a writer child from order 0 to n, SIGKILLing it at
// random points and restarting it after the last committed order, the way
// a redeploy or scale-in interrupts the shop. dieAt adds one deterministic
// crash right after that order's COMMIT.
func writeUnderKills(t *testing.T, role string, pool *pgxpool.Pool, schema, sinkSchema string, n, dieAt int) (kills int) {
	ctx := context.Background()
	next := 0
	for next < n {
		extra := []string{fmt.Sprintf("%s=%d", childFromEnv, next), fmt.Sprintf("%s=%d", childToEnv, n)}
		if dieAt >= next {
			extra = append(extra, fmt.Sprintf("%s=%d", childDieAtEnv, dieAt))
		}
		c := startChild(t, role, schema, sinkSchema, extra...)
		select {
		case <-time.After(40*time.Millisecond + rand.N(80*time.Millisecond)):
		case err := <-c.done:
			c.done <- err // exited by itself: finished or hit dieAt
		}
		c.kill(t)
		kills++
		var last *int
		if err := pool.QueryRow(ctx, `SELECT max(substr(pedido_id, 5)::int) FROM pedidos`).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if last != nil {
			next = *last + 1
		}
	}
	return kills
}

// TestLesson1In900: the shop's old code (INSERT, then PutEvents) loses
// events when the process dies in between; the outbox version, killed the
// same way (and its publisher too), loses none.
func TestLesson1In900(t *testing.T) {
	t.Parallel()
	const n = 600
	const dieAt = 123

	t.Run("naive INSERT then PutEvents loses events", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		pool, schema := migratedPool(t)
		sink, sinkSchema := newSinkSchema(t)
		kills := writeUnderKills(t, roleNaiveWriter, pool, schema, sinkSchema, n, dieAt)
		var orders, lost int
		var lostDieAt bool
		rows, err := pool.Query(ctx, `SELECT pedido_id FROM pedidos`)
		if err != nil {
			t.Fatal(err)
		}
		ids, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		published := map[string]bool{}
		srows, _ := sink.Query(ctx, `SELECT detalle::jsonb->>'agregado_id' FROM recibidos`)
		pub, _ := pgx.CollectRows(srows, pgx.RowTo[string])
		for _, p := range pub {
			published[p] = true
		}
		for _, id := range ids {
			orders++
			if !published[id] {
				lost++
				lostDieAt = lostDieAt || id == orderID(dieAt)
			}
		}
		if orders != n || lost == 0 || !lostDieAt {
			t.Fatalf("%d orders, %d without event (order %d lost: %v); the naive code must lose the crashed ones", orders, lost, dieAt, lostDieAt)
		}
		t.Logf("naive: %d orders in Aurora, %d kills, %d orders without event (1 in %d)", orders, kills, lost, orders/lost)
	})

	t.Run("outbox loses none", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		pool, schema := migratedPool(t)
		sink, sinkSchema := newSinkSchema(t)
		stop := make(chan struct{})
		pubKills, waitChaos := publisherChaos(t, 1, schema, sinkSchema, stop)
		kills := writeUnderKills(t, roleTxWriter, pool, schema, sinkSchema, n, dieAt)
		close(stop)
		waitChaos()
		// Drain what the killed publishers left.
		p, err := NewPublisher(pool, dbSink{pool: sink}, Config{BusName: "b", Source: "s", Lease: time.Second, PublishTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // leases of the killed publishers
		drain(t, p, 30*time.Second)

		var orders int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pedidos`).Scan(&orders); err != nil {
			t.Fatal(err)
		}
		rows := outboxIDs(t, pool)
		byID, _, _ := sinkEvents(t, sink)
		published := map[string]bool{}
		for id, agg := range rows {
			if byID[id] > 0 {
				published[agg] = true
			}
		}
		lost := 0
		for i := range n {
			if !published[orderID(i)] {
				lost++
			}
		}
		if orders != n || len(rows) != n || lost != 0 {
			t.Fatalf("%d orders, %d outbox rows, %d orders without event; want %d, %d, 0", orders, len(rows), lost, n, n)
		}
		t.Logf("outbox: %d orders, %d writer kills, %d publisher kills, 0 orders without event", orders, kills, pubKills.Load())
	})
}
