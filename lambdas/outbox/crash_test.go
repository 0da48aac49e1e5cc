package outbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/mercadofresco/integration/internal/testseed"
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
	childSeedEnv    = "OUTBOX_TEST_SEED"
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
	// sent, if set, is told after each call's entries reached the sink
	// (the child reports it to the parent, which kills only after progress).
	sent func(n int)
	rnd  *testseed.Rand
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
	if s.sent != nil {
		s.sent(len(ids))
	}
	if s.delay > 0 && s.rnd != nil {
		time.Sleep(s.rnd.Duration(s.delay)) // fault injection: the response's way back, not synchronisation
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

// progressFD is the pipe on which a child reports progress to its parent:
// one line per committed order (writers) or per PutEvents call that reached
// the sink (publishers).
const progressFD = 3

func runChild(role string) int {
	ctx := context.Background()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "child", role, err); return 2 }
	progress := os.NewFile(progressFD, "progress")
	var progressMu sync.Mutex
	report := func(n int) {
		progressMu.Lock()
		defer progressMu.Unlock()
		_, _ = fmt.Fprintln(progress, n)
	}
	seed, _ := strconv.ParseUint(os.Getenv(childSeedEnv), 10, 64)
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
		p, err := NewPublisher(pool, dbSink{pool: sink, delay: 4 * time.Millisecond, sent: report, rnd: testseed.FromSeed(seed)}, Config{
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
			report(i)
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
			report(i)
		}
		return 0
	}
	return fail(errors.New("unknown role"))
}

type childProc struct {
	cmd      *exec.Cmd
	stderr   bytes.Buffer
	done     chan error
	progress chan struct{} // one value per progress line, closed at exit
}

func startChild(t testing.TB, role, schema, sinkSchema string, seed uint64, extra ...string) *childProc {
	t.Helper()
	c := &childProc{done: make(chan error, 1), progress: make(chan struct{}, 1<<16)}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childSchemaEnv+"="+schema, childSinkEnv+"="+sinkSchema,
		fmt.Sprintf("%s=%d", childSeedEnv, seed))
	c.cmd.Env = append(c.cmd.Env, extra...)
	c.cmd.Stderr = &c.stderr
	c.cmd.ExtraFiles = []*os.File{w} // fd 3 = progressFD
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close() // the child holds the only write end now
	go func() {
		defer close(c.progress)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c.progress <- struct{}{}
		}
	}()
	go func() { c.done <- c.cmd.Wait() }()
	return c
}

// awaitProgress waits for n progress reports from the child. It returns
// false when the child exited first, and fails the test (never hangs) when
// no report arrives within childProgressTimeout or stop closes.
func (c *childProc) awaitProgress(t testing.TB, n int, stop <-chan struct{}) bool {
	t.Helper()
	for i := 0; i < n; i++ {
		timer := time.NewTimer(childProgressTimeout)
		select {
		case _, ok := <-c.progress:
			timer.Stop()
			if !ok {
				return false
			}
		case <-stop:
			timer.Stop()
			return false
		case <-timer.C:
			t.Errorf("child made no progress in %s (%d of %d reports): %s", childProgressTimeout, i, n, c.stderr.String())
			return false
		}
	}
	return true
}

// childProgressTimeout bounds the wait for a child's next report: far above
// what a loaded 2-core machine needs to start a child and commit one order.
const childProgressTimeout = 60 * time.Second

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

// publisherChaos keeps `slots` publisher processes running until stop is
// closed. Each is SIGKILLed after it has sent 1..3 PutEvents calls to the
// sink (so every kill interrupts real work: after the send and before or
// during the marking, or in the middle of the next claim). It returns the
// number of kills and a wait function.
func publisherChaos(t *testing.T, rnd *testseed.Rand, slots int, schema, sinkSchema string, stop <-chan struct{}) (kills *atomic.Int64, wait func()) {
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
				c := startChild(t, rolePublisher, schema, sinkSchema, rnd.Uint64())
				progressed := c.awaitProgress(t, 1+rnd.IntN(3), stop)
				select {
				case err := <-c.done:
					t.Errorf("publisher child exited by itself: %v: %s", err, c.stderr.String())
					return
				default:
				}
				c.kill(t)
				if progressed {
					kills.Add(1)
				}
				if t.Failed() {
					return
				}
			}
		}()
	}
	return kills, wg.Wait
}

// chaosSize picks the short size (make test) or the full one (make chaos,
// MF_CHAOS=1).
func chaosSize(short, full int) int {
	if os.Getenv("MF_CHAOS") != "" {
		return full
	}
	return short
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

// TestCrashChaos: orders are written (each order and its event in one
// transaction) while publisher processes are SIGKILLed in the middle of
// their work, many times. Every event must reach the sink at least once,
// every duplicate must carry the same event id and content, and no order
// may end up with two different event ids or none. 1,000 orders and at
// least 5 kills in make test; 10,000 orders and 30 kills in make chaos.
func TestCrashChaos(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rnd := testseed.New(t)
	pool, schema := migratedPool(t)
	sink, sinkSchema := newSinkSchema(t)
	orders := chaosSize(1000, 10000)
	minKills := int64(chaosSize(5, 30))
	const writers = 4

	stop := make(chan struct{})
	kills, waitChaos := publisherChaos(t, rnd, 2, schema, sinkSchema, stop)
	// Writers in batches, so the publishers always have work while the
	// kills accumulate: a batch of orders is written only once the previous
	// one has cost a kill (bounded: at most `orders` batches).
	written := 0
	for written < orders && !t.Failed() {
		batch := min(orders-written, max(orders/20, 1))
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := written + w; i < written+batch; i += writers {
					if err := writeOrder(ctx, pool, i); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		written += batch
		if kills.Load() >= minKills {
			continue
		}
		// Give the publishers time to be killed mid-work before the next
		// batch: wait for one more kill (bounded by the child timeout).
		want := kills.Load() + 1
		deadline := time.Now().Add(childProgressTimeout)
		for kills.Load() < want && time.Now().Before(deadline) && !t.Failed() {
			g, err := ReadGauges(ctx, pool)
			if err != nil {
				t.Fatal(err)
			}
			if g.Pending == 0 {
				break // everything published: no work left to interrupt
			}
			time.Sleep(10 * time.Millisecond) // polls a condition, bounded above
		}
	}
	close(stop)
	waitChaos()
	if t.Failed() {
		return
	}
	if kills.Load() < minKills {
		t.Fatalf("only %d publisher processes were killed mid-work (want >= %d): the run proves too little", kills.Load(), minKills)
	}
	// A last publisher that nobody kills finishes the job (including the
	// rows whose leases the killed ones left behind).
	// The bound is on progress, not on the whole drain: on a loaded machine
	// the drain is slow but keeps moving; a stuck publisher (a lease never
	// taken over, a skipped row) makes no progress for a whole minute.
	final := startChild(t, rolePublisher, schema, sinkSchema, rnd.Uint64())
	lastPending, stalledSince := int64(-1), time.Now()
	for {
		g, err := ReadGauges(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if g.Pending == 0 {
			break
		}
		if g.Pending != lastPending {
			lastPending, stalledSince = g.Pending, time.Now()
		}
		if time.Since(stalledSince) > 60*time.Second {
			final.kill(t)
			t.Fatalf("not drained: no progress for 60 s: %+v", g)
		}
		time.Sleep(20 * time.Millisecond) // polls a condition, bounded above
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

// writeUnderKills runs a writer child from order 0 to n, SIGKILLing it
// after it has committed 1..maxPerChild orders and restarting it after the
// last committed order, the way a redeploy or scale-in interrupts the shop.
// dieAt adds one deterministic crash right after that order's COMMIT. Every
// child commits at least one order before it is killed, so the loop ends
// after at most n children.
func writeUnderKills(t *testing.T, rnd *testseed.Rand, role string, pool *pgxpool.Pool, schema, sinkSchema string, n, dieAt int) (kills int) {
	ctx := context.Background()
	const maxPerChild = 40
	next := 0
	for children := 0; next < n; children++ {
		if children > n {
			t.Fatalf("%d writer children for %d orders: no progress", children, n)
		}
		extra := []string{fmt.Sprintf("%s=%d", childFromEnv, next), fmt.Sprintf("%s=%d", childToEnv, n)}
		if dieAt >= next {
			extra = append(extra, fmt.Sprintf("%s=%d", childDieAtEnv, dieAt))
		}
		c := startChild(t, role, schema, sinkSchema, rnd.Uint64(), extra...)
		c.awaitProgress(t, 1+rnd.IntN(maxPerChild), nil) // false: finished or hit dieAt
		c.kill(t)
		if t.Failed() {
			return kills
		}
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

// TestChaosDualWriteLosesEventsTheOutboxNone: the shop's old code (INSERT, then PutEvents) loses
// events when the process dies in between; the outbox version, killed the
// same way (and its publisher too), loses none.
func TestChaosDualWriteLosesEventsTheOutboxNone(t *testing.T) {
	t.Parallel()
	n := chaosSize(600, 2700)
	const dieAt = 123

	t.Run("naive INSERT then PutEvents loses events", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		rnd := testseed.New(t)
		pool, schema := migratedPool(t)
		sink, sinkSchema := newSinkSchema(t)
		kills := writeUnderKills(t, rnd, roleNaiveWriter, pool, schema, sinkSchema, n, dieAt)
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
		rnd := testseed.New(t)
		pool, schema := migratedPool(t)
		sink, sinkSchema := newSinkSchema(t)
		stop := make(chan struct{})
		pubKills, waitChaos := publisherChaos(t, rnd, 1, schema, sinkSchema, stop)
		kills := writeUnderKills(t, rnd, roleTxWriter, pool, schema, sinkSchema, n, dieAt)
		close(stop)
		waitChaos()
		// Drain what the killed publishers left, once their 1 s leases run
		// out. The rows carry many claims by now: a round that timed out on
		// a loaded machine would back a row off for up to RetryMaxDelay, so
		// the drain has a generous timeout, a short backoff and no parking.
		p, err := NewPublisher(pool, dbSink{pool: sink}, Config{BusName: "b", Source: "s", Lease: 20 * time.Second, PublishTimeout: 10 * time.Second,
			RetryMaxDelay: 200 * time.Millisecond, MaxAttempts: 1000})
		if err != nil {
			t.Fatal(err)
		}
		drain(t, p, 2*time.Minute)

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
