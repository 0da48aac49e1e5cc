// Command outbox-bench measures the outbox publisher against Watermill's
// SQL forwarder on the same PostgreSQL, in the same run, with the same
// workload, and prints a Markdown table: for 1 and 4 publishers, events/s
// draining -n pre-written orders into an in-process sink, and the
// commit-to-sink lag (p50 / p99) while -rate orders/s are written for
// -lag-seconds. -deployed runs (-only-deployed for those alone) model the
// Lambda schedule (a publisher a minute for its polling window). -batch
// and -wm-batch override the batch sizes. It uses the tests' local
// PostgreSQL (internal/localaws: $OUTBOX_TEST_DSN, else 127.0.0.1:5432),
// database mf_outbox_bench. The method in full: docs/outbox-benchmark.md.
//
// Usage:
//
//	cd bench && go run ./cmd/outbox-bench -n 20000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

const benchDB = "mf_outbox_bench"

type options struct {
	n          int
	nLatency   int
	latency    time.Duration
	rate       int
	lagSeconds int
	timeout    time.Duration
	batch      int // outbox.Config.BatchSize; 0 = the package default
	wmBatch    int // Watermill's SubscribeBatchSize; 0 = its default (100)
	deployed   time.Duration
	onlyDep    bool
}

type row struct {
	latency    time.Duration
	system     string
	publishers int
	events     int
	drain      time.Duration
	lagN       int
	p50, p99   time.Duration
	maxLag     time.Duration
}

func (r row) rate() float64 {
	if r.drain <= 0 {
		return 0
	}
	return float64(r.events) / r.drain.Seconds()
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 20000, "events per throughput run")
	flag.IntVar(&o.nLatency, "n-latency", 5000, "events per throughput run with -sink-latency")
	flag.DurationVar(&o.latency, "sink-latency", 5*time.Millisecond, "second pass: each sink call takes this long, like a PutEvents round trip (0 to skip)")
	flag.IntVar(&o.rate, "rate", 100, "orders per second written during the lag run")
	flag.IntVar(&o.lagSeconds, "lag-seconds", 10, "length of the lag run")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up a run after this long")
	flag.IntVar(&o.batch, "batch", 0, "outbox publisher BatchSize (0 = the package default)")
	flag.IntVar(&o.wmBatch, "wm-batch", 0, "Watermill SubscribeBatchSize (0 = its default, 100)")
	flag.DurationVar(&o.deployed, "deployed", 150*time.Second, "length of each commit-to-bus lag run under the deployed invocation model (and the previous one); 0 skips them")
	flag.BoolVar(&o.onlyDep, "only-deployed", false, "run only the deployed-model lag runs")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "outbox-bench:", err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(o); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "outbox-bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx := context.Background()
	if err := localaws.EnsureDatabase(ctx, benchDB); err != nil {
		return err
	}
	var rows []row
	if o.onlyDep {
		return runDeployed(ctx, o)
	}
	passes := []options{o}
	if o.latency > 0 {
		lo := o
		lo.n = o.nLatency
		passes = append(passes, lo)
	}
	passes[0].latency = 0
	for _, po := range passes {
		for _, b := range []struct {
			what  string
			bench func() (row, error)
		}{
			{"outbox with 1 publisher", func() (row, error) { return benchOutbox(ctx, po, 1, false) }},
			{"outbox with 4 publishers", func() (row, error) { return benchOutbox(ctx, po, 4, false) }},
			{"outbox with LISTEN", func() (row, error) { return benchOutbox(ctx, po, 1, true) }},
			{"watermill with 1 forwarder", func() (row, error) { return benchWatermill(ctx, po, 1) }},
			{"watermill with 4 forwarders", func() (row, error) { return benchWatermill(ctx, po, 4) }},
		} {
			r, err := b.bench()
			if err != nil {
				return fmt.Errorf("%s: %w", b.what, err)
			}
			rows = append(rows, r)
		}
	}
	printTable(o, rows)
	return runDeployed(ctx, o)
}

func runDeployed(ctx context.Context, o options) error {
	if o.deployed <= 0 {
		return nil
	}
	var rows []deployedRow
	for _, m := range deployments() {
		r, err := benchDeployed(ctx, o, m, o.deployed)
		if err != nil {
			return fmt.Errorf("deployed model %q: %w", m.name, err)
		}
		rows = append(rows, r)
	}
	printDeployed(o, o.deployed, rows)
	return nil
}

// freshSchema creates a new schema and returns a pool bound to it.
func freshSchema(ctx context.Context, name string, maxConns int32) (*pgxpool.Pool, func(), error) {
	admin, err := pgx.Connect(ctx, localaws.PostgresDSN(benchDB, ""))
	if err != nil {
		return nil, nil, err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+name+" CASCADE; CREATE SCHEMA "+name); err != nil {
		return nil, nil, err
	}
	cfg, err := pgxpool.ParseConfig(localaws.PostgresDSN(benchDB, name))
	if err != nil {
		return nil, nil, err
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {
		pool.Close()
		if c, err := pgx.Connect(context.Background(), localaws.PostgresDSN(benchDB, "")); err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+name+" CASCADE")
			c.Close(context.Background())
		}
	}
	return pool, cleanup, nil
}

// recorder is the local sink of both systems: first arrival time per id.
type recorder struct {
	mu       sync.Mutex
	arrived  map[string]time.Time
	distinct atomic.Int64
}

func newRecorder() *recorder { return &recorder{arrived: map[string]time.Time{}} }

func (r *recorder) record(id string) {
	now := time.Now()
	r.mu.Lock()
	if _, ok := r.arrived[id]; !ok {
		r.arrived[id] = now
		r.distinct.Add(1)
	}
	r.mu.Unlock()
}

// waitFor waits until n distinct events arrived, ctx ends (a publisher
// failed to start) or timeout passes.
func (r *recorder) waitFor(ctx context.Context, n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for r.distinct.Load() < n {
		if err := ctx.Err(); err != nil {
			return err
		} else if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d events arrived within %s", r.distinct.Load(), n, timeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// lags returns p50, p99 and the maximum of arrival - commit for the
// given commits, and how many of them arrived.
func (r *recorder) lags(commits map[string]time.Time) (p50, p99, maxLag time.Duration, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ds []time.Duration
	for id, c := range commits {
		if a, ok := r.arrived[id]; ok {
			ds = append(ds, a.Sub(c))
		}
	}
	if len(ds) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return q(0.50), q(0.99), ds[len(ds)-1], len(ds)
}

// ebSink is the outbox's EventBridge stand-in: one PutEvents call of up
// to 10 entries costs latency.
type ebSink struct {
	rec     *recorder
	latency time.Duration
}

func (s ebSink) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	if s.latency > 0 {
		time.Sleep(s.latency)
	}
	for _, e := range in.Entries {
		s.rec.record(eventID(aws.ToString(e.Detail)))
	}
	return &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}, nil
}

// eventID takes the id from the detail without a JSON decode, so the sink
// costs the same for both systems (Watermill's hands over msg.UUID).
func eventID(detail string) string {
	const prefix = `{"id_evento":"`
	if strings.HasPrefix(detail, prefix) && len(detail) >= len(prefix)+36 {
		return detail[len(prefix) : len(prefix)+36]
	}
	var d struct {
		ID string `json:"id_evento"`
	}
	_ = json.Unmarshal([]byte(detail), &d)
	return d.ID
}

// wmSink is Watermill's output publisher stand-in. The forwarder calls
// Publish once per message, so each message costs latency.
type wmSink struct {
	rec     *recorder
	latency time.Duration
}

func (s wmSink) Publish(_ string, msgs ...*message.Message) error {
	if s.latency > 0 {
		time.Sleep(s.latency)
	}
	for _, m := range msgs {
		s.rec.record(m.UUID)
	}
	return nil
}

func (s wmSink) Close() error { return nil }

func payload(i int) []byte {
	return fmt.Appendf(nil, `{"version":1,"pedido_id":"ped-%07d","cliente_id":"cli-%d","total_centimos":4820,"moneda":"EUR","token_tarjeta":"tok_visa_4242","lineas":[{"sku":"manzana","cantidad":3,"precio_centimos":120}]}`, i, i%977)
}

// writeFunc writes orders [from, to) in one transaction and returns the
// event ids.
type writeFunc func(ctx context.Context, from, to int) ([]string, error)

// adder adds order i's event to a transaction and returns its id.
type adder func(ctx context.Context, i int) (string, error)

// writer writes each order and, in the same transaction, its event with
// the adder begin returns for the transaction.
func writer(pool *pgxpool.Pool, begin func(tx pgx.Tx) (adder, error)) writeFunc {
	return func(ctx context.Context, from, to int) ([]string, error) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback(ctx)
		add, err := begin(tx)
		if err != nil {
			return nil, err
		}
		var ids []string
		for i := from; i < to; i++ {
			if _, err := tx.Exec(ctx, `INSERT INTO pedidos (pedido_id, cliente_id, lineas, total_centimos) VALUES ($1, 'cli', '[]', 4820)`, fmt.Sprintf("ped-%07d", i)); err != nil {
				return nil, err
			}
			id, err := add(ctx, i)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, tx.Commit(ctx)
	}
}

func outboxWriter(pool *pgxpool.Pool) writeFunc {
	return writer(pool, func(tx pgx.Tx) (adder, error) {
		return func(ctx context.Context, i int) (string, error) {
			id, err := outbox.Add(ctx, tx, outbox.Event{AggregateID: fmt.Sprintf("ped-%07d", i), Type: "PedidoCreado", Payload: payload(i)})
			return id.String(), err
		}, nil
	})
}

// watermillWriter publishes through Watermill's forwarder over the
// transaction, one publisher per transaction.
func watermillWriter(pool *pgxpool.Pool) writeFunc {
	return writer(pool, func(tx pgx.Tx) (adder, error) {
		pub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{SchemaAdapter: wsql.DefaultPostgreSQLSchema{}}, watermill.NopLogger{})
		if err != nil {
			return nil, err
		}
		fwd := forwarder.NewPublisher(pub, forwarder.PublisherConfig{ForwarderTopic: "outbox"})
		return func(_ context.Context, i int) (string, error) {
			m := message.NewMessage(watermill.NewUUID(), payload(i))
			return m.UUID, fwd.Publish("pedidos", m)
		}, nil
	})
}

// prefill writes n orders in transactions of 100 with 4 writers.
func prefill(ctx context.Context, w writeFunc, n int) error {
	var g errgroup.Group
	g.SetLimit(4)
	for from := 0; from < n; from += 100 {
		g.Go(func() error {
			_, err := w(ctx, from, min(from+100, n))
			return err
		})
	}
	return g.Wait()
}

// steady writes rate orders/s, one per transaction (4 writers at most at
// once), for d, starting at order number base, and returns each event's
// commit time.
func steady(ctx context.Context, w writeFunc, base, rate int, d time.Duration) (map[string]time.Time, error) {
	commits := map[string]time.Time{}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(4)
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for k := range int(float64(rate) * d.Seconds()) {
		time.Sleep(time.Until(start.Add(time.Duration(k) * interval)))
		g.Go(func() error {
			ids, err := w(ctx, base+k, base+k+1)
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				commits[id] = now
			}
			return err
		})
	}
	return commits, g.Wait()
}

// measure runs one row in a fresh schema with the outbox's tables: setup
// returns the writer and, for the publishers, a function that adds them to
// g (each runs until ctx ends). It prefills o.n orders, times the
// publishers' drain of them, then measures the lag of o.rate orders/s
// written for o.lagSeconds, waiting o.timeout at most for the last.
func measure(ctx context.Context, o options, schema string, publishers int, vacuum string,
	setup func(pool *pgxpool.Pool) (writeFunc, func(ctx context.Context, g *errgroup.Group, rec *recorder), error)) (row, error) {
	pool, cleanup, err := freshSchema(ctx, schema, int32(8+2*publishers))
	if err != nil {
		return row{}, err
	}
	defer cleanup()
	if _, err := outbox.Migrate(ctx, pool); err != nil { // the same pedidos table for both
		return row{}, err
	}
	w, start, err := setup(pool)
	if err != nil {
		return row{}, err
	}
	if err := prefill(ctx, w, o.n); err != nil {
		return row{}, err
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE "+vacuum); err != nil {
		return row{}, err
	}
	rec := newRecorder()
	rctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(rctx)
	begin := time.Now()
	start(gctx, g, rec)
	r := row{latency: o.latency, publishers: publishers, events: o.n}
	err = rec.waitFor(gctx, int64(o.n), o.timeout)
	if err == nil {
		r.drain = time.Since(begin)
		var commits map[string]time.Time
		if commits, err = steady(ctx, w, o.n, o.rate, time.Duration(o.lagSeconds)*time.Second); err == nil {
			err = rec.waitFor(gctx, int64(o.n+len(commits)), o.timeout)
			r.p50, r.p99, r.maxLag, r.lagN = rec.lags(commits)
		}
	}
	cancel()
	if gerr := g.Wait(); gerr != nil { // why a publisher did not start
		return row{}, gerr
	}
	return r, err
}

func benchOutbox(ctx context.Context, o options, publishers int, listen bool) (row, error) {
	schema := fmt.Sprintf("bench_outbox_%d_%v", publishers, listen)
	r, err := measure(ctx, o, schema, publishers, "outbox", func(pool *pgxpool.Pool) (writeFunc, func(context.Context, *errgroup.Group, *recorder), error) {
		return outboxWriter(pool), func(ctx context.Context, g *errgroup.Group, rec *recorder) {
			for range publishers {
				g.Go(func() error {
					var wake <-chan struct{}
					if listen {
						conn, err := pgx.Connect(ctx, localaws.PostgresDSN(benchDB, schema))
						if err != nil {
							return err
						}
						defer conn.Close(context.Background())
						var stop func()
						if wake, stop, err = outbox.Listen(ctx, conn); err != nil {
							return err
						}
						defer stop() // runs before conn.Close (deferred earlier)
					}
					p, err := outbox.NewPublisher(pool, ebSink{rec, o.latency}, outbox.Config{BusName: "bus-mercadofresco", Source: "mercadofresco.tienda", BatchSize: o.batch})
					if err != nil {
						return err
					}
					_ = p.Run(ctx, wake) // until the run ends
					return nil
				})
			}
		}, nil
	})
	r.system = "outbox (lease, SKIP LOCKED, poll 1 s)"
	if listen {
		r.system = "outbox + LISTEN/NOTIFY wake-up"
	}
	return r, err
}

func benchWatermill(ctx context.Context, o options, forwarders int) (row, error) {
	r, err := measure(ctx, o, fmt.Sprintf("bench_watermill_%d", forwarders), forwarders, "", func(pool *pgxpool.Pool) (writeFunc, func(context.Context, *errgroup.Group, *recorder), error) {
		newSub := func() (*wsql.Subscriber, error) {
			return wsql.NewSubscriber(wsql.BeginnerFromPgx(pool), wsql.SubscriberConfig{
				ConsumerGroup:    "mercadofresco",
				SchemaAdapter:    wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: o.wmBatch},
				OffsetsAdapter:   wsql.DefaultPostgreSQLOffsetsAdapter{},
				InitializeSchema: true,
			}, watermill.NopLogger{})
		}
		init, err := newSub()
		if err == nil {
			err = init.SubscribeInitialize("outbox")
		}
		return watermillWriter(pool), func(ctx context.Context, g *errgroup.Group, rec *recorder) {
			for range forwarders {
				g.Go(func() error {
					sub, err := newSub()
					if err != nil {
						return err
					}
					f, err := forwarder.NewForwarder(sub, wmSink{rec, o.latency}, watermill.NopLogger{}, forwarder.Config{ForwarderTopic: "outbox", CloseTimeout: 5 * time.Second})
					if err != nil {
						return err
					}
					go func() { <-ctx.Done(); _ = f.Close() }() // Close stops Run
					_ = f.Run(ctx)
					return nil
				})
			}
		}, err
	})
	r.system = "Watermill SQL forwarder (watermill-sql v4.1.2)"
	return r, err
}

func printTable(o options, rows []row) {
	var version string
	if c, err := pgx.Connect(context.Background(), localaws.PostgresDSN("postgres", "")); err == nil {
		_ = c.QueryRow(context.Background(), "SHOW server_version").Scan(&version)
		c.Close(context.Background())
	}
	fmt.Printf("Run %s, PostgreSQL %s on 127.0.0.1, %s/%s, %d CPUs; lag run: %d orders/s (one transaction each) for %d s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), version, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), o.rate, o.lagSeconds)
	fmt.Println("| sink latency per call | system | publishers | events | drain time | events/s | vs Watermill (same publishers) | lag p50 | lag p99 | lag samples |")
	fmt.Println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		// Against the Watermill row of the same sink latency and publishers.
		ratio := "-"
		if i := slices.IndexFunc(rows, func(w row) bool {
			return strings.HasPrefix(w.system, "Watermill") && w.latency == r.latency && w.publishers == r.publishers
		}); i >= 0 && rows[i].rate() > 0 {
			ratio = fmt.Sprintf("%.1fx", r.rate()/rows[i].rate())
		}
		fmt.Printf("| %s | %s | %d | %d | %.2f s | %.0f | %s | %s | %s | %d |\n", r.latency, r.system, r.publishers, r.events,
			r.drain.Seconds(), r.rate(), ratio, r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond), r.lagN)
	}
}
