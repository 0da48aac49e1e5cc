package stock_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/mercadofresco/integration/internal/testseed"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/stock"
)

var ddb *localaws.Dynalite

func TestMain(m *testing.M) { localaws.RunWithDynalite(m, &ddb) }

func table(t *testing.T) string {
	t.Helper()
	return ddb.NewTable(t, "stock", lambdaapi.StockPartitionKey, lambdaapi.StockSortKey)
}

func newStore(t *testing.T, db stock.DynamoDBAPI) *stock.Store {
	t.Helper()
	s, err := stock.NewStore(db, table(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func reserva(p, sku string, n int64) eventsapi.MovimientoStock {
	return eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Reserva, PedidoID: p, SKU: sku, Cantidad: n, Secuencia: 1}
}

func liberacion(p, sku string, n int64) eventsapi.MovimientoStock {
	return eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Liberacion, PedidoID: p, SKU: sku, Cantidad: n, Secuencia: 2}
}

func ajuste(ref, sku string, n, seq int64) eventsapi.MovimientoStock {
	return eventsapi.MovimientoStock{Version: 1, Tipo: eventsapi.Ajuste, Referencia: ref, SKU: sku, Cantidad: n, Secuencia: seq}
}

func requireTotals(t *testing.T, s *stock.Store, sku string, existencias, reservado int64) {
	t.Helper()
	got, err := s.Read(context.Background(), sku)
	if err != nil {
		t.Fatal(err)
	}
	want := stock.Totals{SKU: sku, Existencias: existencias, Reservado: reservado, Disponible: existencias - reservado}
	if got != want {
		t.Fatalf("totals of %s = %+v, want %+v", sku, got, want)
	}
}

func TestMovementsInOrder(t *testing.T) {
	s := newStore(t, ddb.Client)
	ctx := ctxT(t)
	for _, tc := range []struct {
		m    eventsapi.MovimientoStock
		want stock.Outcome
	}{
		{ajuste("INV-1", "SKU-1", 10, 1), stock.Applied},
		{reserva("P-1", "SKU-1", 3), stock.Applied},
		{reserva("P-2", "SKU-1", 4), stock.Applied},
		{reserva("P-1", "SKU-1", 3), stock.Skipped},    // replay
		{liberacion("P-2", "SKU-1", 4), stock.Applied}, // compensation
		{liberacion("P-2", "SKU-1", 4), stock.Skipped}, // replay
		{reserva("P-2", "SKU-1", 4), stock.Skipped},    // late: must not undo the release
		{ajuste("INV-1", "SKU-1", 10, 1), stock.Skipped},
		{ajuste("INV-2", "SKU-1", -2, 2), stock.Applied},
	} {
		got, err := s.Apply(ctx, tc.m)
		if err != nil || got != tc.want {
			t.Fatalf("%+v: %v %v, want %v", tc.m, got, err, tc.want)
		}
	}
	requireTotals(t, s, "SKU-1", 8, 3)
}

func TestNegativeStockIsRefusedWithTheNumbers(t *testing.T) {
	s := newStore(t, ddb.Client)
	ctx := ctxT(t)
	var neg *stock.NegativeStockError
	if _, err := s.Apply(ctx, reserva("P-1", "SKU-NUEVO", 1)); !errors.As(err, &neg) || neg.Known || neg.Needed != 1 {
		t.Fatalf("reserva of a SKU never counted: %v", err)
	}
	mustApply(t, s, ajuste("INV-1", "SKU-1", 5, 1))
	mustApply(t, s, reserva("P-1", "SKU-1", 4))
	_, err := s.Apply(ctx, reserva("P-2", "SKU-1", 2))
	if !errors.As(err, &neg) || !neg.Known || neg.Disponible != 1 || neg.Needed != 2 || !errors.Is(err, stock.ErrNegativeStock) {
		t.Fatalf("over-reservation: %v", err)
	}
	if _, err := s.Apply(ctx, ajuste("INV-2", "SKU-1", -3, 2)); !errors.Is(err, stock.ErrNegativeStock) {
		t.Fatalf("adjustment below the reserved units: %v", err)
	}
	// Nothing of the refused movements stayed behind: the same movements
	// are refused again, and the stock is what the accepted ones made it.
	requireTotals(t, s, "SKU-1", 5, 4)
	if _, err := s.Apply(ctx, reserva("P-2", "SKU-1", 2)); !errors.Is(err, stock.ErrNegativeStock) {
		t.Fatalf("second attempt: %v", err)
	}
}

func mustApply(t *testing.T, s *stock.Store, m eventsapi.MovimientoStock) {
	t.Helper()
	if _, err := s.Apply(context.Background(), m); err != nil {
		t.Fatalf("%+v: %v", m, err)
	}
}

// scenario is a set of movements over a few SKUs whose final stock does not
// depend on their order: each SKU is counted first (its opening ajuste),
// then reserved below its count; some reservations are released, and some
// more stock arrives.
type scenario struct {
	opening []eventsapi.MovimientoStock
	rest    []eventsapi.MovimientoStock
	want    map[string][2]int64 // existencias, reservado
}

func newScenario(rnd *testseed.Rand, skus, orders int) scenario {
	sc := scenario{want: map[string][2]int64{}}
	for i := range skus {
		sku := fmt.Sprintf("SKU-%d", i)
		n := int64(100 + rnd.IntN(50))
		sc.opening = append(sc.opening, ajuste("APERTURA", sku, n, 1))
		w := [2]int64{n, 0}
		for o := range orders {
			q := int64(1 + rnd.IntN(5))
			p := fmt.Sprintf("P-%d-%d", i, o)
			sc.rest = append(sc.rest, reserva(p, sku, q))
			if rnd.IntN(3) == 0 {
				sc.rest = append(sc.rest, liberacion(p, sku, q))
			} else {
				w[1] += q
			}
		}
		for a := range rnd.IntN(3) {
			q := int64(1 + rnd.IntN(20))
			sc.rest = append(sc.rest, ajuste(fmt.Sprintf("ENTRADA-%d", a), sku, q, int64(2+a)))
			w[0] += q
		}
		sc.want[sku] = w
	}
	return sc
}

// deliveries shuffles the movements and delivers each one 1 to 3 times.
func (sc scenario) deliveries(rnd *testseed.Rand) []eventsapi.MovimientoStock {
	var out []eventsapi.MovimientoStock
	for _, m := range sc.rest {
		for range 1 + rnd.IntN(3) {
			out = append(out, m)
		}
	}
	for i := len(out) - 1; i > 0; i-- {
		j := rnd.IntN(i + 1)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func (sc scenario) check(t *testing.T, s *stock.Store) {
	t.Helper()
	for sku, w := range sc.want {
		requireTotals(t, s, sku, w[0], w[1])
	}
}

// Movements delivered in any order, each up to three times, end in the
// stock the movements make in order, once each.
func TestOutOfOrderAndReplayedMovementsEndInTheCorrectState(t *testing.T) {
	rnd := testseed.New(t)
	s := newStore(t, ddb.Client)
	sc := newScenario(rnd, 4, 12)
	for _, m := range sc.opening {
		mustApply(t, s, m)
	}
	for _, m := range sc.deliveries(rnd) {
		if _, err := s.Apply(ctxT(t), m); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
	}
	sc.check(t, s)
}

// crashingDB performs a write and then reports an error in place of its
// answer (the Lambda died, or the answer was lost) at the writes the test
// picks.
type crashingDB struct {
	stock.DynamoDBAPI
	mu     sync.Mutex
	writes int
	crash  func(n int) bool
}

var errCrash = errors.New("crash after the write")

func (c *crashingDB) after(err error) error {
	c.mu.Lock()
	c.writes++
	n := c.writes
	c.mu.Unlock()
	if err == nil && c.crash(n) {
		return errCrash
	}
	return err
}

func (c *crashingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.DynamoDBAPI.PutItem(ctx, in, o...)
	return out, c.after(err)
}

func (c *crashingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.DynamoDBAPI.UpdateItem(ctx, in, o...)
	return out, c.after(err)
}

// A consumer dies after any of its writes (one write in four, at random);
// the crashed movement is delivered again later, after other movements of
// the same lines. The totals end exactly right, with no change left pending.
func TestCrashAfterAnyWriteEndsInTheCorrectState(t *testing.T) {
	rnd := testseed.New(t)
	db := &crashingDB{DynamoDBAPI: ddb.Client, crash: func(int) bool { return rnd.IntN(4) == 0 }}
	s := newStore(t, db)
	sc := newScenario(rnd, 3, 10)
	queue := append(append([]eventsapi.MovimientoStock{}, sc.opening...), sc.deliveries(rnd)...)
	crashes := 0
	for i := 0; i < len(queue); i++ {
		m := queue[i]
		_, err := s.Apply(ctxT(t), m)
		switch {
		case errors.Is(err, errCrash):
			crashes++
			if m.Secuencia == 1 && m.Tipo == eventsapi.Ajuste && m.Referencia == "APERTURA" {
				queue = append(queue[:i+1], append([]eventsapi.MovimientoStock{m}, queue[i+1:]...)...) // the count comes first
			} else {
				queue = append(queue, m) // redelivered later
			}
		case err != nil:
			t.Fatalf("%+v: %v", m, err)
		}
		if len(queue) > 10*len(sc.rest)+100 {
			t.Fatal("movements keep crashing")
		}
	}
	if crashes < 5 {
		t.Fatalf("only %d crashes: the test does not exercise recovery", crashes)
	}
	t.Logf("%d deliveries, %d crashes", len(queue), crashes)
	sc.check(t, s)
	for sku := range sc.want {
		if tot, _ := s.Read(context.Background(), sku); tot.Pending != 0 {
			t.Errorf("%s has %d pending changes", sku, tot.Pending)
		}
	}
}

// Movements of the same SKU and lines applied concurrently (a redrive
// overlapping the FIFO consumer) still count once each.
func TestConcurrentMovementsOfTheSameLines(t *testing.T) {
	rnd := testseed.New(t)
	s := newStore(t, ddb.Client)
	sc := newScenario(rnd, 1, 16)
	for _, m := range sc.opening {
		mustApply(t, s, m)
	}
	work := sc.deliveries(rnd)
	var wg sync.WaitGroup
	errs := make(chan error, len(work))
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(work); i += 4 {
				for {
					_, err := s.Apply(ctxT(t), work[i])
					if errors.Is(err, stock.ErrConflict) {
						continue // transient: the queue would redeliver it
					}
					if err != nil {
						errs <- fmt.Errorf("%+v: %w", work[i], err)
					}
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sc.check(t, s)
}

// lateDB performs every write and keeps it, so that the test can deliver
// it again later: a request whose answer the caller gave up on (an SDK
// attempt timed out and was retried, an invocation hit its deadline) may
// still reach DynamoDB after the retry, and after the movement's redelivery
// has finished.
type lateDB struct {
	stock.DynamoDBAPI
	mu      sync.Mutex
	updates []*dynamodb.UpdateItemInput
	puts    []*dynamodb.PutItemInput
}

func (l *lateDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	l.mu.Lock()
	l.puts = append(l.puts, in)
	l.mu.Unlock()
	return l.DynamoDBAPI.PutItem(ctx, in, o...)
}

func (l *lateDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	l.mu.Lock()
	l.updates = append(l.updates, in)
	l.mu.Unlock()
	return l.DynamoDBAPI.UpdateItem(ctx, in, o...)
}

// deliverLate sends one kept write again, straight to DynamoDB, and
// reports whether it changed anything (a failed condition did not).
func (l *lateDB) deliverLate(t *testing.T, rnd *testseed.Rand) bool {
	t.Helper()
	l.mu.Lock()
	n := len(l.updates) + len(l.puts)
	i := rnd.IntN(n)
	var err error
	if i < len(l.updates) {
		in := l.updates[i]
		l.mu.Unlock()
		_, err = ddb.Client.UpdateItem(ctxT(t), in)
	} else {
		in := l.puts[i-len(l.updates)]
		l.mu.Unlock()
		_, err = ddb.Client.PutItem(ctxT(t), in)
	}
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// Every write may arrive a second time, late: after its caller moved on,
// after the movement was applied by its redelivery, after later movements
// of the same line. Each late copy changes nothing (its condition fails),
// and the totals end exactly right with no change left pending.
func TestLateDuplicateWritesChangeNothing(t *testing.T) {
	rnd := testseed.New(t)
	db := &lateDB{DynamoDBAPI: ddb.Client}
	s := newStore(t, db)
	sc := newScenario(rnd, 3, 10)
	for _, m := range sc.opening {
		mustApply(t, s, m)
	}
	landed, late := 0, 0
	for _, m := range sc.deliveries(rnd) {
		if _, err := s.Apply(ctxT(t), m); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		for range rnd.IntN(3) {
			late++
			if db.deliverLate(t, rnd) {
				landed++
			}
		}
	}
	t.Logf("%d late writes, %d changed an item", late, landed)
	if landed > 0 {
		t.Errorf("%d late copies of writes changed the table", landed)
	}
	sc.check(t, s)
	for sku := range sc.want {
		if tot, _ := s.Read(context.Background(), sku); tot.Pending != 0 {
			t.Errorf("%s has %d pending changes", sku, tot.Pending)
		}
	}
}
