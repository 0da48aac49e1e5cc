package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/payment"
	"github.com/mercadofresco/integration/lambdas/shop"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/stock"
)

// Scenario is one seeded run.
type Scenario struct {
	Orders int
	// SKUs is the catalogue the orders' lines draw from: each SKU is a
	// message group of the stock queue, processed in order, so fewer SKUs
	// serialise more of the stock movements.
	SKUs int
	// Burst is the simulated time over which the orders arrive, in Bursts
	// back-to-back peaks (at least 1) whose arrivals thicken towards their
	// middle, as on a Friday evening.
	Burst  time.Duration
	Bursts int
	// Outage is how long the gateway answers 503 to everything, starting
	// when OutageAt of the orders have been placed, in the time of the code
	// under test: it lasts Outage ÷ ExecScale of wall clock, like the
	// breaker's open period and the read timeouts it is measured against
	// (in wall-clock time a 30 s outage would outlast 12 customer retries,
	// whose pauses are waits, ÷ WaitScale).
	Outage   time.Duration
	OutageAt float64
	// PublisherKills is how many times a publisher is SIGKILLed, spread
	// over the run by published events.
	PublisherKills int
	// Poison is the number of PedidoConfirmado version 2 messages sent to
	// cola-mercadofresco-pedidos; PoisonEach the number of messages of an
	// unsupported version sent to each other consumer's queue (e-mail, ERP
	// notice, stock), and BadData the number of messages with bad data
	// (not JSON, required fields missing) sent to each of the four.
	Poison, PoisonEach, BadData int
	// RedisDown is how long (wall clock) Redis is stopped, at RedisAt of
	// the orders.
	RedisDown time.Duration
	RedisAt   float64
	// Carts is the number of cart stream records fed through the pipe.
	Carts int
	// Limit bounds the run's wall-clock time.
	Limit time.Duration
	// ClaimsOnly keeps, of the targeted faults, those that only the
	// idempotency claims absorb: the cobro whose answer Lambda loses, and
	// an order whose every copy of PedidoConfirmado reaches a new sandbox
	// of the preparation consumer (no in-process cache between them). The
	// consumer kill, the gateway hang and the budget and compensation
	// orders are left out (TestVerdictCatchesBrokenClaims).
	ClaimsOnly bool
}

const (
	stockQueue = "mercadofresco-movimientos-stock.fifo"
	badSKU     = "FR-999-SIN-INVENTARIO"
	initial    = 1_000_000
)

func sku(i int) string { return fmt.Sprintf("FR-%03d", i) }

// order is one order of the run and what the customer saw.
type order struct {
	Solicitud shop.Solicitud
	Intentos  int
	Failures  []string
	Succeeded bool
	// failedAt is the first failure, succeededAt the success, on the
	// run's simulated clock.
	failedAt, succeededAt time.Time
}

// Run is one run's state.
type Run struct {
	w  *World
	sc Scenario

	rng    *rand.Rand
	rngMu  sync.Mutex
	writer *pgxpool.Pool

	mu        sync.Mutex
	stopped   bool
	orders    map[string]*order
	ids       []string
	retries   sync.WaitGroup
	pendingRe atomic.Int64

	esms    []*ESM
	results []localaws.ExecutionResult // the finished executions
	pubs    *Publishers
	kill    *ConsumerKill
	hangOn  string
	// lostAnswer is the order whose first successful cobro invocation
	// loses its answer (Lambda.ServiceException: the workflow runs cobro
	// again); budgetOrder the order whose every charge the gateway answers
	// with 503 (its retries pass the 15-call budget); compOrder the order
	// whose confirmation publish fails and whose refund the gateway
	// refuses (its compensation fails).
	lostAnswer, budgetOrder, compOrder string
	lostOnce                           atomic.Bool
	// coldCopies is the order whose preparation copies each run in a new
	// sandbox (Scenario.ClaimsOnly).
	coldCopies string
	// wantDLQ is how many messages each DLQ must hold at the end, by name.
	wantDLQ map[string]int

	started       time.Time
	queues        []QueueLine
	maxExecutions int64
	lastArrival   time.Duration // on the run's clock from the start
}

// NewRun prepares a run: its orders, the bus, the event source mappings,
// the orders of the targeted faults and the consumer kill's hook, and Step
// Functions.
func NewRun(w *World, sc Scenario) *Run {
	if sc.Orders < 1 || sc.SKUs < 1 {
		w.fatalf("a scenario needs orders and SKUs: %d orders, %d SKUs", sc.Orders, sc.SKUs)
	}
	r := &Run{w: w, sc: sc, rng: rand.New(rand.NewPCG(w.opts.Seed, 0x0dd)), orders: map[string]*order{}, wantDLQ: map[string]int{}}
	r.makeOrders()
	w.bus = w.loadBus()
	w.aws.Router = w.bus
	r.esms = w.loadESMs()
	var prep *ESM
	for _, e := range r.esms {
		if e.Queue.Name == "cola-mercadofresco-pedidos" {
			prep = e
		}
	}
	if prep == nil {
		w.fatalf("no event source mapping on cola-mercadofresco-pedidos")
	}
	if !sc.ClaimsOnly {
		r.kill = w.killConsumerOn(prep, r.ids[len(r.ids)/10])
		r.hangOn = r.ids[len(r.ids)/5]
	}
	r.pickSpecial()
	if sc.ClaimsOnly {
		prep.coldStartsFor(r.coldCopies)
	}
	w.sfn = w.startStepFunctions(context.Background(), r.runTask, r.executionDone)
	w.aws.Executor = w.sfn
	r.writer = localaws.PoolAs(w.t, w.db, "", w.writer, 8)
	return r
}

func (r *Run) intn(n int) int {
	r.rngMu.Lock()
	defer r.rngMu.Unlock()
	return r.rng.IntN(n)
}

func (w *World) newID() string {
	w.rngLock.Lock()
	defer w.rngLock.Unlock()
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", w.rng.Uint32(), w.rng.Uint32()&0xffff, w.rng.Uint32()&0xfff, w.rng.Uint32()&0xfff, w.rng.Uint64()&0xffffffffffff)
}

// jitter is full jitter on a simulated duration.
func (w *World) jitter(d time.Duration) time.Duration {
	w.rngLock.Lock()
	defer w.rngLock.Unlock()
	return time.Duration(w.rng.Int64N(int64(d) + 1))
}

// makeOrders draws the orders: 1 to 4 lines of the SKUs, and the SKU with
// bad data (never counted in stock) in about 1 % of them.
func (r *Run) makeOrders() {
	for i := range r.sc.Orders {
		id := fmt.Sprintf("P-%05d-%04x", i+1, r.intn(0x10000))
		s := shop.Solicitud{PedidoID: id, ClienteID: fmt.Sprintf("C-%04d", r.intn(400)), Moneda: "EUR",
			TokenTarjeta: fmt.Sprintf("tok_visa_%04d", r.intn(10000)), ClienteNombre: "Cliente de prueba"}
		s.ClienteEmail = strings.ToLower(s.ClienteID) + "@clientes.mercadofresco.example"
		seen := map[string]bool{}
		for range 1 + r.intn(4) {
			k := sku(1 + r.intn(r.sc.SKUs))
			if (i == 2 || r.intn(100) == 0) && !seen[badSKU] {
				k = badSKU
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			s.Lineas = append(s.Lineas, shop.Linea{SKU: k, Cantidad: int64(1 + r.intn(5)), PrecioCentimos: int64(50 + r.intn(1950))})
		}
		r.orders[id] = &order{Solicitud: s}
		r.ids = append(r.ids, id)
	}
}

// place writes one attempt of an order through the shop's code.
func (r *Run) place(ctx context.Context, o *order) error {
	r.mu.Lock()
	o.Intentos++
	s := o.Solicitud
	s.Intento = o.Intentos
	r.mu.Unlock()
	_, err := shop.CrearPedido(ctx, r.writer, s)
	return err
}

// executionDone is the customer's side: an order whose workflow failed for
// an unavailable gateway (its circuit open, the gateway's errors) is paid
// again after a pause, as the shop's page asks.
func (r *Run) executionDone(res localaws.ExecutionResult) {
	r.mu.Lock()
	r.results = append(r.results, res)
	o := r.orders[pedidoOf([]byte(res.Input))]
	if o == nil {
		r.mu.Unlock()
		return
	}
	if res.Status == "SUCCEEDED" {
		o.Succeeded, o.succeededAt = true, r.w.clock.Now()
		r.mu.Unlock()
		return
	}
	if len(o.Failures) == 0 {
		o.failedAt = r.w.clock.Now()
	}
	o.Failures = append(o.Failures, res.Error)
	retry := (res.Error == lambdaapi.ErrCircuitoAbierto || res.Error == lambdaapi.ErrPasarelaNoDisponible) && o.Intentos < 12 && !r.stopped
	if retry {
		r.pendingRe.Add(1)
		r.retries.Add(1) // under mu: never after Execute's Wait began
	}
	r.mu.Unlock()
	if !retry {
		return
	}
	pause := time.Duration(30+r.intn(90)) * time.Second
	go func() {
		defer r.retries.Done()
		defer r.pendingRe.Add(-1)
		_ = r.w.clock.Sleep(context.Background(), pause)
		if err := r.place(context.Background(), o); err != nil {
			r.w.t.Errorf("e2e: retry of %s: %v", o.Solicitud.PedidoID, err)
		}
	}()
}

// seedStock counts every SKU but the bad one, with ajuste movements through
// the stock queue (FIFO per SKU, so they come before any reserva).
func (r *Run) seedStock(ctx context.Context) {
	q := r.w.QueueNamed(stockQueue)
	for i := 1; i <= r.sc.SKUs; i++ {
		body, _ := json.Marshal(map[string]any{"version": 1, "tipo": "ajuste", "sku": sku(i), "cantidad": initial,
			"secuencia": 1, "referencia": "inventario-inicial-" + sku(i), "emitido_en": r.w.clock.Now().Format(time.RFC3339)})
		if _, err := r.w.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q.URL, MessageBody: aws.String(string(body)),
			MessageGroupId: aws.String(sku(i)), MessageDeduplicationId: aws.String("inventario-inicial-" + sku(i))}); err != nil {
			r.w.fatalf("seed stock: %v", err)
		}
	}
}

// sendPoison sends messages no consumer can process to every consumer's
// queue: PedidoConfirmado (or a stock movement) of a version no consumer
// knows, as a producer deployed ahead of its consumers would, and bad data
// (not JSON; required fields missing). Each must reach its queue's DLQ
// (its redrive policy's) with its reason and nothing else: wantDLQ counts
// them by DLQ.
func (r *Run) sendPoison(ctx context.Context) {
	send := func(queueName string, body, group string) {
		q := r.w.QueueNamed(queueName)
		if q.DLQ == nil {
			r.w.fatalf("queue %s has no dead-letter queue", queueName)
		}
		r.wantDLQ[q.DLQ.Name]++
		in := &sqs.SendMessageInput{QueueUrl: &q.URL, MessageBody: &body}
		if q.FIFO { // a group of its own: poison never holds a SKU's movements back
			in.MessageGroupId, in.MessageDeduplicationId = &group, &group
		}
		if _, err := r.w.sqs.SendMessage(ctx, in); err != nil {
			r.w.fatalf("poison to %s: %v", queueName, err)
		}
	}
	confirmed := func(i int) string {
		b, _ := json.Marshal(map[string]any{"version": 2, "pedido_id": fmt.Sprintf("P-V2-%03d", i),
			"cliente": map[string]any{"id": "C-V2"}, "importe": map[string]any{"centimos": 1000, "moneda": "EUR"}})
		return string(b)
	}
	bad := func(i int) string {
		if i%2 == 0 {
			return "no es JSON {"
		}
		return fmt.Sprintf(`{"version":1,"pedido_id":"P-MALO-%03d"}`, i)
	}
	for _, q := range []struct {
		name        string
		unsupported int
	}{{"cola-mercadofresco-pedidos", r.sc.Poison}, {"cola-mercadofresco-correo-confirmacion", r.sc.PoisonEach}, {"cola-mercadofresco-aviso-erp", r.sc.PoisonEach}} {
		for i := range q.unsupported {
			send(q.name, confirmed(i), "")
		}
		for i := range r.sc.BadData {
			send(q.name, bad(i), "")
		}
	}
	for i := range r.sc.PoisonEach {
		b, _ := json.Marshal(map[string]any{"version": 2, "tipo": "reserva", "sku": sku(1), "cantidad": 1, "secuencia": 1,
			"pedido_id": fmt.Sprintf("P-V2-%03d", i), "emitido_en": r.w.clock.Now().Format(time.RFC3339)})
		send(stockQueue, string(b), fmt.Sprintf("veneno-v2-%d", i))
	}
	for i := range r.sc.BadData {
		body := bad(i)
		if i%2 == 1 {
			body = `{"version":1,"tipo":"reserva","sku":"","cantidad":-1}`
		}
		send(stockQueue, body, fmt.Sprintf("veneno-datos-%d", i))
	}
}

// pickSpecial chooses the orders of the targeted faults, each distinct
// from the others and from the kill's and the hang's: the compensation's
// order has no line of the bad SKU (its release would go to the DLQ).
func (r *Run) pickSpecial() {
	taken := map[string]bool{r.hangOn: true}
	if r.kill != nil {
		taken[r.kill.Pedido] = true
	}
	pick := func(from int, ok func(id string) bool) string {
		for i := from; i < from+len(r.ids); i++ {
			id := r.ids[i%len(r.ids)]
			if !taken[id] && ok(id) {
				taken[id] = true
				return id
			}
		}
		r.w.fatalf("no order left for a targeted fault")
		return ""
	}
	any := func(string) bool { return true }
	n := len(r.ids)
	r.lostAnswer = pick(n*2/5, any)
	if r.sc.ClaimsOnly {
		r.coldCopies = pick(n*3/4, any)
		return
	}
	r.budgetOrder = pick(n*3/4, any)
	r.compOrder = pick(n*9/10, func(id string) bool {
		for _, l := range r.orders[id].Solicitud.Lineas {
			if l.SKU == badSKU {
				return false
			}
		}
		return true
	})
}

// feedCarts sends DynamoDB stream records of the carts table through the
// pipe: expiries by TTL (which the pipe's filter passes), removals by a
// user and updates (which it drops).
func (r *Run) feedCarts(ctx context.Context) (ttl int) {
	var recs []map[string]any
	for i := range r.sc.Carts {
		id := fmt.Sprintf("CARRITO-%04d", i)
		rec := map[string]any{"eventID": r.w.newID(), "eventSource": "aws:dynamodb", "awsRegion": r.w.opts.Region,
			"dynamodb": map[string]any{"Keys": map[string]any{"carrito_id": map[string]any{"S": id}},
				"OldImage": map[string]any{"carrito_id": map[string]any{"S": id}, "cliente_id": map[string]any{"S": "C-0001"},
					"actualizado_en": map[string]any{"S": "2026-11-27T19:00:00Z"}}}}
		switch i % 3 {
		case 0:
			rec["eventName"] = "REMOVE"
			rec["userIdentity"] = map[string]any{"type": "Service", "principalId": "dynamodb.amazonaws.com"}
			ttl++
		case 1:
			rec["eventName"] = "REMOVE"
		default:
			rec["eventName"] = "MODIFY"
		}
		recs = append(recs, rec)
	}
	if err := r.w.bus.Stream(ctx, recs); err != nil {
		r.w.fatalf("%v", err)
	}
	return ttl
}

// Execute runs the scenario and returns its report.
func (r *Run) Execute(ctx context.Context) *Report {
	w, sc := r.w, r.sc
	r.started = time.Now()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var pollers sync.WaitGroup
	defer pollers.Wait()
	defer stop()

	r.seedStock(ctx)
	r.sendPoison(ctx)
	r.queues = make([]QueueLine, len(r.esms))
	pollers.Add(1 + len(r.esms))
	go func() { defer pollers.Done(); r.sample(ctx) }()
	for _, e := range r.esms {
		go func() { defer pollers.Done(); e.Run(ctx) }()
	}
	var outage atomic.Bool
	// on is a gateway fault on the requests to path for one order.
	on := func(path, order string, times int, f localaws.Fault) localaws.Rule {
		return localaws.Rule{Match: func(q localaws.ServiceRequest) bool { return q.Path == path && pedidoOf(q.Body) == order }, Times: times, Fault: f}
	}
	w.deps.Gateway.Inject(localaws.Rule{Match: func(localaws.ServiceRequest) bool { return outage.Load() }, Fault: localaws.Fault{Status: 503}})
	if !sc.ClaimsOnly {
		w.deps.Gateway.Inject(
			on(payment.PathCobros, r.hangOn, 1, localaws.Fault{HangAfterEffect: true}),
			on(payment.PathCobros, r.budgetOrder, 0, localaws.Fault{Status: 503}),
			on(payment.PathReembolsos, r.compOrder, 0, localaws.Fault{Status: 422}),
		)
	}
	w.deps.ERPWebhook.Inject(localaws.Rule{Times: 5, Fault: localaws.Fault{Status: 503}}) // EventBridge retries them
	r.pubs = w.startPublishers(2)
	ttlCarts := r.feedCarts(ctx)

	// Publisher kills: at seeded points of the events published so far.
	expectedEvents := int64(sc.Orders)
	var killAt []int64
	for i := range sc.PublisherKills {
		lo := float64(i) / float64(sc.PublisherKills)
		hi := float64(i+1) / float64(sc.PublisherKills)
		f := lo + (hi-lo)*(0.2+0.6*float64(r.intn(1000))/1000)
		killAt = append(killAt, int64(f*0.9*float64(expectedEvents)))
	}
	published := w.bus.Routed
	watchDone := make(chan struct{})
	go func() { // the publisher killer, driven by progress
		defer close(watchDone)
		for i := 0; i < len(killAt) && ctx.Err() == nil; {
			if published() >= killAt[i] {
				r.pubs.Kill(i)
				i++
				continue
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	// Orders arrive over the burst (simulated time; a triangle with its
	// peak in the middle).
	outageStart, redisAt := int(sc.OutageAt*float64(sc.Orders)), int(sc.RedisAt*float64(sc.Orders))
	var outageDone chan struct{}
	var redisDone <-chan time.Time
	bursts := float64(max(sc.Bursts, 1))
	for i, id := range r.ids {
		k, u := math.Modf(float64(i) / float64(sc.Orders) * bursts)
		var frac float64
		if u < 0.5 {
			frac = math.Sqrt(u/2) * 1
		} else {
			frac = 1 - math.Sqrt((1-u)/2)
		}
		at := time.Duration((k + frac) / bursts * float64(sc.Burst))
		if wait := w.clock.Real(at) - time.Since(r.started); wait > 0 {
			time.Sleep(wait)
		}
		if i == outageStart && sc.Outage > 0 {
			outage.Store(true)
			outageDone = make(chan struct{})
			time.AfterFunc(time.Duration(float64(sc.Outage)/w.opts.ExecScale), func() { outage.Store(false); close(outageDone) })
		}
		if i == redisAt && sc.RedisDown > 0 {
			w.redis.Stop()
			redisDone = time.After(sc.RedisDown)
		}
		if redisDone != nil {
			select {
			case <-redisDone:
				w.redis.Start()
				redisDone = nil
			default:
			}
		}
		if err := r.place(ctx, r.orders[id]); err != nil {
			w.t.Errorf("e2e: order %s: %v", id, err)
		}
	}
	r.mu.Lock()
	r.lastArrival = w.clock.Now().Sub(w.clock.base)
	r.mu.Unlock()
	if redisDone != nil {
		<-redisDone
		w.redis.Start()
	}
	if outageDone != nil {
		<-outageDone
	}

	quiet := r.waitQuiet(ctx, r.started.Add(sc.Limit))
	stop()
	<-watchDone
	r.mu.Lock()
	r.stopped = true // executions still running past the limit ask no customer again
	r.mu.Unlock()
	r.retries.Wait()
	pollers.Wait()
	w.bus.Stop()
	rep := r.report(context.Background(), ttlCarts)
	rep.AbandonedDeliveries = w.bus.Abandoned()
	rep.Quiet = quiet
	return rep
}

// waitQuiet waits until nothing is left to do (every order placed and
// its retries, the outbox published, no delivery, execution or invocation
// running, the consumers' queues empty), checked twice in a row, or until
// the limit.
func (r *Run) waitQuiet(ctx context.Context, limit time.Time) string {
	calm := 0
	for time.Now().Before(limit) {
		busy := r.busy(ctx)
		if busy == "" {
			calm++
			if calm == 3 {
				return ""
			}
		} else {
			calm = 0
		}
		time.Sleep(100 * time.Millisecond)
	}
	return r.busy(ctx)
}

// busy says what is still going on ("" when nothing).
func (r *Run) busy(ctx context.Context) string {
	w := r.w
	var pending int
	if err := w.admin.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE publicado_en IS NULL AND aparcado_en IS NULL`).Scan(&pending); err != nil {
		return "outbox: " + err.Error()
	}
	var parts []string
	if pending > 0 {
		parts = append(parts, fmt.Sprintf("%d outbox rows unpublished", pending))
	}
	if n := r.pendingRe.Load(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d customer retries pending", n))
	}
	if n := w.bus.Pending(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d deliveries", n))
	}
	if n := w.sfn.Active(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d executions", n))
	}
	for _, e := range r.esms {
		if n := held(w.sqs.Stats(e.Queue.URL)); n > 0 || e.busy.Load() > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d messages", e.Queue.Name, n))
		}
	}
	return strings.Join(parts, ", ")
}

// QueueLine is one consumer queue's depth over the run, on its clock from
// the start: the peak and when the queue was last seen holding messages;
// Left is what it still held at the end (it never drained).
type QueueLine struct {
	Name            string
	Peak, Left      int
	PeakAt, Drained time.Duration
}

// sample records, until ctx ends, each consumer queue's depth and the
// executions in flight.
func (r *Run) sample(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		at := r.w.clock.Now().Sub(r.w.clock.base)
		r.mu.Lock()
		for i, e := range r.esms {
			q := &r.queues[i]
			q.Name = e.Queue.Name
			if n := held(r.w.sqs.Stats(e.Queue.URL)); n > 0 {
				q.Drained = at
				if n > q.Peak {
					q.Peak, q.PeakAt = n, at
				}
			}
		}
		r.maxExecutions = max(r.maxExecutions, r.w.sfn.Active())
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// held is how many messages a queue holds (visible or in flight).
func held(st localaws.QueueStats) int { return st.Sent - st.Deleted - st.MovedToDLQ }

// Report is what the run found.
type Report struct {
	// Queues are the consumer queues' peaks and drain times, MaxExecutions
	// the most executions in flight, PaymentSlots the most invocations of
	// cobro at once and Throttled its invocations refused.
	Queues                          []QueueLine
	MaxExecutions                   int64
	LastArrival                     time.Duration
	PaymentSlots, Throttled         int64
	Seed                            uint64
	Scenario                        Scenario
	ExecScale, WaitScale            float64
	IgnoreKeys                      bool
	KeyRetention                    time.Duration
	Orders, Attempts                int
	Refunds                         int
	ERPWebhookEvents, WebhookOrders int
	WebhookDeliveries               int
	AbandonedDeliveries             int64
	PedidoCreadoEvents              int // first attempts (what the ERP webhook gets)
	PedidoCreadoAll                 int // with the payment retries' repeats
	Executions                      map[string]int
	Causes                          []string
	Lost                            []string
	Stock                           []StockLine
	StockMismatches                 int
	BadSKULines                     int
	DLQs                            []DLQLine
	WantDLQ                         map[string]int // messages by DLQ
	MaxGatewayCalls                 int
	MaxGatewayOrder                 string
	GatewayCalls                    int
	PublisherKills                  int
	KilledConsumer                  string
	HangOrder                       string
	Timeouts                        map[string]int64
	CartsTTL, CartsQueued           int
	Overrides                       []string
	Wall                            time.Duration
	Quiet                           string
	Failures                        []string

	// Layers says, per dependency, what each layer absorbed.
	Layers []LayerLine
	// Duplicates are the orders with more than one effect somewhere;
	// Uncertain the uncertain outcomes the scenario caused.
	Duplicates []Duplicate
	Uncertain  []string
	// The targeted faults' orders: the one whose cobro answer Lambda
	// lost, the one past the call budget, the one whose compensation
	// failed; ColdCopies the one whose preparation copies each ran in a new
	// sandbox (Scenario.ClaimsOnly).
	LostAnswer, Budget, Comp Targeted
	ColdCopies               string
	Alarms                   []AlarmLine
	Circuit                  CircuitSummary
	expectedFate             map[string]bool
}

// Targeted is what happened to an order a fault targets: its gateway
// calls, the charges and refunds the gateway made, its payment attempts
// and how its executions ended.
type Targeted struct {
	Order                             string
	Calls, Charges, Refunds, Attempts int
	Failures                          []string
}

// StockLine is one SKU's stock against the expected ledger.
type StockLine struct {
	SKU                            string
	Existencias, Reservado         int64
	WantExistencias, WantReservado int64
}

// DLQLine is one dead-letter queue with messages: Copies of them repeat
// another's source message (a consumer's dead-lettering is at least once:
// a batch that timed out after its DLQ send, or whose send's answer was
// lost, comes back and sends again).
type DLQLine struct {
	Name, Verdict    string
	Messages, Copies int
}

func (r *Run) report(ctx context.Context, ttlCarts int) *Report {
	w := r.w
	rep := &Report{Seed: w.opts.Seed, Scenario: r.sc, ExecScale: w.opts.ExecScale, WaitScale: w.opts.WaitScale,
		IgnoreKeys: w.opts.IgnoreKeys, KeyRetention: cmp.Or(w.opts.KeyRetention, localaws.DefaultKeyRetention),
		Orders: len(r.ids), Executions: map[string]int{}, Timeouts: map[string]int64{}, Overrides: w.overrides,
		PublisherKills: r.pubs.Kills, KilledConsumer: r.kill.victim(), HangOrder: r.hangOn, ColdCopies: r.coldCopies,
		Wall: time.Since(r.started), CartsTTL: ttlCarts,
		expectedFate: map[string]bool{r.budgetOrder: true, r.compOrder: true}}
	for _, o := range r.orders {
		rep.Attempts += o.Intentos
	}

	// Every dependency's ledger, the uncertain outcomes and the layers.
	ls := r.ledgers()
	for _, l := range ls {
		rep.Layers = append(rep.Layers, l.layer)
	}
	rep.Duplicates = duplicates(ls, r.ids)
	rep.Uncertain = uncertainList(ls)
	// The gateway's ledger: the charge requests per order, whatever their
	// outcome, and the requests that ran their effect, by path and order.
	calls, effects := map[string]int{}, map[[2]string]int{}
	for _, q := range w.deps.Gateway.Requests() {
		if q.Path == payment.PathCobros {
			calls[pedidoOf(q.Body)]++
		}
		if q.Effect {
			effects[[2]string{q.Path, pedidoOf(q.Body)}]++
		}
		if q.Effect && q.Path == payment.PathReembolsos {
			rep.Refunds++
		}
	}
	for p, n := range calls {
		rep.GatewayCalls += n
		if n > rep.MaxGatewayCalls {
			rep.MaxGatewayCalls, rep.MaxGatewayOrder = n, p
		}
	}
	hook, deliveries := w.deps.ERPWebhook.Events()
	hookOrders := map[string]bool{}
	for _, p := range hook {
		hookOrders[p] = true
	}
	rep.ERPWebhookEvents, rep.WebhookOrders, rep.WebhookDeliveries = len(hook), len(hookOrders), deliveries
	r.mu.Lock()
	results := r.results
	r.mu.Unlock()
	for _, res := range results {
		k := res.Status
		if res.Error != "" {
			k += " (" + res.Error + ")"
		}
		if rep.Executions[k] == 0 && res.Status != "SUCCEEDED" {
			rep.Causes = append(rep.Causes, k+": "+res.Cause)
		}
		rep.Executions[k]++
	}
	rep.Alarms = w.stateMachineLogAlarms(results)
	rep.Circuit = r.circuitSummary()
	for _, id := range r.ids {
		if rep.expectedFate[id] {
			continue // checked on its own
		}
		var missing []string
		for _, l := range ls {
			if len(l.effects[id]) == 0 {
				missing = append(missing, l.layer.Dependency)
			}
		}
		if len(missing) > 0 {
			rep.Lost = append(rep.Lost, fmt.Sprintf("%s (none of: %s; attempts %d, failures %v)",
				id, strings.Join(missing, ", "), r.orders[id].Intentos, r.orders[id].Failures))
		}
	}
	targeted := func(id string) Targeted {
		if id == "" {
			return Targeted{} // not in the scenario
		}
		return Targeted{Order: id, Calls: calls[id], Charges: effects[[2]string{payment.PathCobros, id}],
			Refunds: effects[[2]string{payment.PathReembolsos, id}], Attempts: r.orders[id].Intentos, Failures: r.orders[id].Failures}
	}
	rep.LostAnswer, rep.Budget, rep.Comp = targeted(r.lostAnswer), targeted(r.budgetOrder), targeted(r.compOrder)
	if err := w.admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE payload->'intento' IS NULL), count(*) FROM outbox WHERE tipo = 'PedidoCreado'`).
		Scan(&rep.PedidoCreadoEvents, &rep.PedidoCreadoAll); err != nil {
		rep.Failures = append(rep.Failures, "outbox: "+err.Error())
	}

	// Stock against the ledger: every order confirmed reserves its lines
	// (an order never charged reserves nothing); the compensated order's
	// reservations are released.
	want := map[string]int64{}
	r.mu.Lock()
	for _, id := range r.ids {
		o := r.orders[id]
		for _, l := range o.Solicitud.Lineas {
			switch {
			case l.SKU == badSKU && (o.Succeeded || id == r.compOrder):
				rep.BadSKULines++
			case l.SKU != badSKU && o.Succeeded:
				want[l.SKU] += l.Cantidad
			}
		}
	}
	r.mu.Unlock()
	// Their reservations reach the stock queue's DLQ, besides the poison.
	rep.WantDLQ = maps.Clone(r.wantDLQ)
	rep.WantDLQ[w.QueueNamed(stockQueue).DLQ.Name] += rep.BadSKULines
	var table string // the stock table, as the functions are configured with it
	for _, f := range w.functions {
		table = cmp.Or(f.Env[lambdaapi.EnvStockTable], table)
	}
	store, err := stock.NewStore(w.ddb.Client, table)
	if err != nil {
		rep.Failures = append(rep.Failures, err.Error())
	}
	for i := 1; store != nil && i <= r.sc.SKUs+1; i++ {
		line := StockLine{SKU: sku(i), WantExistencias: initial, WantReservado: want[sku(i)]}
		if i > r.sc.SKUs {
			line = StockLine{SKU: badSKU} // never counted: nothing in stock, nothing reserved
		}
		t, err := store.Read(ctx, line.SKU)
		if err != nil {
			rep.Failures = append(rep.Failures, err.Error())
		}
		line.Existencias, line.Reservado = t.Existencias, t.Reservado
		if line.Existencias != line.WantExistencias || line.Reservado != line.WantReservado {
			rep.StockMismatches++
		}
		rep.Stock = append(rep.Stock, line)
	}

	// Dead-letter queues, classified by the DLQ tool.
	tool := &dlq.Tool{SQS: w.sqs, Clock: w.clock}
	for _, q := range w.DLQs() {
		msgs, _ := w.sqs.Inspect(q.URL)
		if len(msgs) == 0 {
			continue
		}
		line := DLQLine{Name: q.Name, Messages: len(msgs)}
		sources := map[string]bool{} // a consumer's DLQ record names its source message; a redrive keeps its id
		for _, m := range msgs {
			id := m.MessageID
			if a, ok := m.MessageAttributes[sqsbatch.AttrOriginalMessageID]; ok {
				id = aws.ToString(a.StringValue)
			}
			sources[id] = true
		}
		line.Copies = len(msgs) - len(sources)
		target, err := tool.Resolve(ctx, q.Name, w.opts.Env)
		if err != nil { // not one of the Messaging stack's catalogue
			target, err = tool.Resolve(ctx, q.URL, "")
		}
		if err == nil {
			rep, err := tool.Classify(ctx, target, 1000, dlq.ConsumerOptions(target))
			if err == nil {
				line.Verdict = string(rep.Verdict)
			}
		}
		if err != nil {
			line.Verdict = "error: " + err.Error()
		}
		rep.DLQs = append(rep.DLQs, line)
	}
	carts, _ := w.sqs.Inspect(w.QueueNamed("cola-mercadofresco-carritos-abandonados").URL)
	seen := map[string]bool{}
	for _, m := range carts {
		var ev struct {
			Detail struct {
				CarritoID string `json:"carrito_id"`
			} `json:"detail"`
		}
		_ = json.Unmarshal([]byte(m.Body), &ev)
		seen[ev.Detail.CarritoID] = true
	}
	rep.CartsQueued = len(seen)
	for _, f := range w.functions {
		if n := f.timeout.Load(); n > 0 {
			rep.Timeouts[f.Entry] = n
		}
		if f.Entry == "lambdas/cobro" {
			rep.PaymentSlots, rep.Throttled = f.Reserved.Peak(), f.Reserved.Throttled()
		}
	}
	r.mu.Lock()
	rep.Queues, rep.MaxExecutions, rep.LastArrival = r.queues, r.maxExecutions, r.lastArrival
	for i, e := range r.esms {
		rep.Queues[i].Left = held(w.sqs.Stats(e.Queue.URL))
	}
	r.mu.Unlock()
	return rep
}

// Promise is one promise the run checks, with what it found.
type Promise struct {
	Text   string
	Kept   bool
	Broken []string // what broke it
}

// Promises checks every promise of the report, in the order the report
// lists them.
func (rep *Report) Promises() []Promise {
	var out []Promise
	check := func(text string, broken ...string) {
		var b []string
		for _, x := range broken {
			if x != "" {
				b = append(b, x)
			}
		}
		out = append(out, Promise{Text: text, Kept: len(b) == 0, Broken: b})
	}
	bad := func(cond bool, format string, args ...any) string {
		if cond {
			return fmt.Sprintf(format, args...)
		}
		return ""
	}
	sc := rep.Scenario
	check("the run settles: every order, retry, event and message is done",
		bad(rep.Quiet != "", "the run did not settle within %s: %s", sc.Limit, rep.Quiet))
	check("no order is lost: every order but the two targeted ones is charged, prepared, e-mailed and notified to the ERP",
		bad(len(rep.Lost) > 0, "%d orders lost: %v", len(rep.Lost), rep.Lost[:min(len(rep.Lost), 5)]))
	if rep.IgnoreKeys {
		check("with the dependencies ignoring Idempotency-Key, the only repeated effects are the uncertain outcomes the scenario caused, by order", rep.unexplained()...)
	} else {
		check("no effect happens twice (the dependencies honour Idempotency-Key)", rep.unexplained()...)
	}
	check("no refund is made but the compensation's (which the gateway refuses)",
		bad(rep.Refunds != 0, "%d refunds, want 0", rep.Refunds))
	check("every ERP webhook event is one order's first PedidoCreado",
		bad(rep.ERPWebhookEvents != rep.PedidoCreadoEvents || rep.WebhookOrders != rep.Orders,
			"the ERP webhook received %d distinct events for %d orders, want the %d first PedidoCreado events, one per order", rep.ERPWebhookEvents, rep.WebhookOrders, rep.PedidoCreadoEvents))
	check("stock matches the ledger of confirmed orders (a failed compensation's reservations are released)",
		bad(rep.StockMismatches > 0, "%d SKUs' stock differs from the ledger", rep.StockMismatches))
	var dlq []string
	want := maps.Clone(rep.WantDLQ)
	for _, d := range rep.DLQs {
		w, ok := want[d.Name]
		dlq = append(dlq, bad(!ok || d.Messages-d.Copies != w, "DLQ %s holds %d source messages, want %d", d.Name, d.Messages-d.Copies, w))
		dlq = append(dlq, bad(strings.HasPrefix(d.Verdict, "error"), "DLQ %s: the DLQ tool could not classify it: %s", d.Name, d.Verdict))
		delete(want, d.Name)
	}
	for name, w := range want {
		dlq = append(dlq, bad(w > 0, "DLQ %s is empty, want %d messages", name, w))
	}
	check("unsupported versions and bad data reach their own queue's DLQ, on every consumer's queue, and nothing else does", dlq...)
	check("no order fails for a throttle: a payment task refused by Lambda waits its turn",
		bad(rep.Executions["FAILED ("+lambdaapi.ErrLambdaThrottled+")"] > 0, "%d executions failed with %s", rep.Executions["FAILED ("+lambdaapi.ErrLambdaThrottled+")"], lambdaapi.ErrLambdaThrottled))
	check("no order makes more than 15 gateway calls",
		bad(rep.MaxGatewayCalls > 15, "order %s made %d gateway calls (at most 15)", rep.MaxGatewayOrder, rep.MaxGatewayCalls))
	budget := rep.Budget.Failures
	check(fmt.Sprintf("an order whose charges all fail (%s) stops at the 15-call budget with IntentosAgotados, and its customer is not asked again", rep.Budget.Order),
		bad(rep.Budget.Calls != 15, "%d gateway calls, want exactly 15", rep.Budget.Calls),
		bad(len(budget) == 0 || budget[len(budget)-1] != "IntentosAgotados", "its executions ended %v, want the last IntentosAgotados", budget),
		bad(countOf(budget, "IntentosAgotados") != 1, "%d executions ended IntentosAgotados, want 1 (no payment retry after it)", countOf(budget, "IntentosAgotados")))
	alarmFired, alarmErr := false, ""
	for _, a := range rep.Alarms {
		alarmFired = alarmFired || (a.Fired && a.Datapoints == 1)
		if a.Error != "" {
			alarmErr = a.Name + ": " + a.Error
		}
	}
	check(fmt.Sprintf("a failed compensation (%s: confirmation publish failing, refund refused) ends in CompensacionFallida, charged once and not refunded, and its alarm fires", rep.Comp.Order),
		bad(rep.Comp.Charges != 1 || rep.Comp.Refunds != 0, "%d charges, %d refunds; want 1 and 0", rep.Comp.Charges, rep.Comp.Refunds),
		bad(countOf(rep.Comp.Failures, "CompensacionFallida") != 1, "its executions ended %v, want one CompensacionFallida", rep.Comp.Failures),
		bad(len(rep.Alarms) == 0, "the templates have no alarm on a metric filter of the state machine's log"),
		bad(len(rep.Alarms) > 0 && !alarmFired, "the alarm did not fire once: %+v", rep.Alarms),
		alarmErr)
	check(fmt.Sprintf("a cobro whose answer Lambda lost (%s) is run again without a second charge request", rep.LostAnswer.Order),
		bad(rep.LostAnswer.Charges != 1, "the gateway performed %d charge requests for it, want 1", rep.LostAnswer.Charges))
	check("every EventBridge delivery ends (delivered or dead-lettered)",
		bad(rep.AbandonedDeliveries > 0, "%d EventBridge deliveries were still retrying at the end", rep.AbandonedDeliveries))
	check("the pipe queues exactly the carts expired by TTL",
		bad(rep.CartsQueued != rep.CartsTTL, "%d abandoned carts queued, want the %d TTL expiries", rep.CartsQueued, rep.CartsTTL))
	check("the faults happened: the consumer kill and every publisher kill",
		bad(rep.KilledConsumer == "", "the consumer kill did not happen"),
		bad(rep.PublisherKills != sc.PublisherKills, "%d publisher kills, want %d", rep.PublisherKills, sc.PublisherKills))
	if len(rep.Failures) > 0 {
		check("the run could read every ledger", rep.Failures...)
	}
	return out
}

func countOf(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// Check returns the broken promises, empty when the run kept them all.
func (rep *Report) Check() []string {
	var bad []string
	for _, p := range rep.Promises() {
		for _, b := range p.Broken {
			bad = append(bad, p.Text+": "+b)
		}
	}
	return bad
}

// Markdown renders the report.
func (rep *Report) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	sc := rep.Scenario
	p("# End-to-end run\n\n")
	p("Generated by `make e2e` (internal/e2e), which replays the seed recorded here; `MF_SEED=new make e2e` runs a new seed into "+
		"cdk.out/e2e-report.md. The same run with 100 orders, with the dependencies ignoring Idempotency-Key, is part of `make test`. "+
		"Seed %d: MF_SEED=%d replays the same orders and faults at the same points of progress; the interleaving of the concurrent "+
		"parts, and so the retry counts, vary from run to run.\n\n", rep.Seed, rep.Seed)
	keys := fmt.Sprintf("the external services honour Idempotency-Key and keep a key's answer %s of the run's clock", rep.KeyRetention)
	if rep.IgnoreKeys {
		keys = "the external services ignore Idempotency-Key: they perform every request they receive, so only the project's own layers stand between a repeat and a second effect"
	}
	p("Scenario: %d orders of %d SKUs over a simulated %s burst; %s; every event and SNS message delivered twice; outbox publisher SIGKILLed %d times; "+
		"the preparation consumer SIGKILLed between its idempotency claim and its completion (order %s); a %s gateway outage (503; %s of wall clock) from %.0f %% of the orders; "+
		"one gateway timeout after the charge was made (order %s); one cobro invocation whose answer Lambda lost (order %s); one order whose every charge the gateway refuses with 503 (order %s); "+
		"one order whose confirmation publish fails and whose refund the gateway refuses (order %s); Redis stopped for %s at %.0f %% of the orders; "+
		"%d PedidoConfirmado version 2 messages to the preparation queue and %d of an unsupported version to each other consumer's queue, %d with bad data to each of the four; "+
		"SKU %s never counted in stock; %d cart stream records through the pipe.\n\n",
		sc.Orders, sc.SKUs, sc.Burst, keys, sc.PublisherKills, orNone(rep.KilledConsumer), sc.Outage, time.Duration(float64(sc.Outage)/rep.ExecScale), 100*sc.OutageAt, rep.HangOrder,
		rep.LostAnswer.Order, rep.Budget.Order, rep.Comp.Order, sc.RedisDown, 100*sc.RedisAt,
		sc.Poison, sc.PoisonEach, sc.BadData, badSKU, sc.Carts)
	p("## Promises checked\n\n")
	for _, pr := range rep.Promises() {
		mark := "kept"
		if !pr.Kept {
			mark = "**broken**: " + strings.Join(pr.Broken, "; ")
		}
		p("- %s: %s\n", pr.Text, mark)
	}
	p("\n| | |\n|---|---|\n")
	p("| Orders in | %d (%d payment attempts) |\n", rep.Orders, rep.Attempts)
	p("| Refunds | %d |\n", rep.Refunds)
	p("| ERP webhook (API destination) | %d distinct events for %d orders (%d deliveries); the outbox holds %d PedidoCreado, %d of them payment retries, which the rule leaves out |\n",
		rep.ERPWebhookEvents, rep.WebhookOrders, rep.WebhookDeliveries, rep.PedidoCreadoAll, rep.PedidoCreadoAll-rep.PedidoCreadoEvents)
	p("| Orders lost | %d (besides the two targeted ones) |\n", len(rep.Lost))
	p("| Gateway calls | %d; at most %d for one order (%s) |\n", rep.GatewayCalls, rep.MaxGatewayCalls, rep.MaxGatewayOrder)
	p("| Abandoned carts (pipe) | %d queued of %d TTL expiries |\n", rep.CartsQueued, rep.CartsTTL)
	p("| Wall time | %s |\n\n", rep.Wall.Round(100*time.Millisecond))

	p("## What each layer absorbed\n\n")
	p("Deliveries are what the project's code received (queue messages with every repeat, task invocations); requests what reached the " +
		"external service; the difference is what the project's idempotency claims absorbed. Replayed is what the service's own key store " +
		"absorbed (0 when it ignores keys).\n\n")
	p("| Dependency | Deliveries | Requests | Distinct keys | Most requests for one key | Effects | Replayed by the key store |\n|---|---|---|---|---|---|---|\n")
	for _, l := range rep.Layers {
		d := "—"
		if l.Deliveries > 0 {
			d = fmt.Sprintf("%d %s", l.Deliveries, l.DeliveredBy)
		}
		keys, most := fmt.Sprint(l.Keys), fmt.Sprint(l.MaxRequestsPerKey)
		if l.Keys == 0 {
			keys, most = "none sent", "—"
		}
		p("| %s | %s | %d | %s | %s | %d | %d |\n", l.Dependency, d, l.Requests, keys, most, l.Effects, l.Replayed)
	}
	p("\nUncertain outcomes the scenario caused (a repeat of these is allowed when the services ignore keys):\n\n")
	for _, u := range rep.Uncertain {
		p("- %s\n", u)
	}
	if len(rep.Uncertain) == 0 {
		p("- none\n")
	}
	p("\nRepeated effects:")
	if len(rep.Duplicates) == 0 {
		p(" none.\n\n")
	} else {
		p("\n\n")
		for _, d := range rep.Duplicates {
			p("- %s: %d %s (requests %s)\n", d.Order, d.Effects, d.Dependency, strings.Join(d.Requests, ", "))
		}
		p("\n")
	}

	p("## Workflow executions\n\n")
	for _, k := range slices.Sorted(maps.Keys(rep.Executions)) {
		p("- %s: %d\n", k, rep.Executions[k])
	}
	p("\n")
	c := rep.Circuit
	p("The CircuitoAbierto failures are first attempts during the gateway outage: the breaker, open, refused the charge without calling "+
		"the gateway, the execution failed at once, and the shop asked the customer to pay again. %d orders failed their first attempt "+
		"with CircuitoAbierto; %d of them were paid on a later attempt, after %d payment retries in all; their customers waited "+
		"%s (median) and at most %s of the run's clock from the first failure to the confirmed charge.\n\n",
		c.FirstAttempts, c.PaidLater, c.Retries, c.MedianWait.Round(time.Second), c.MaxWait.Round(time.Second))
	for _, cause := range rep.Causes {
		p("- %s\n", cause)
	}
	if len(rep.Causes) > 0 {
		p("\n")
	}
	p("Order %s (every charge refused): %d gateway calls over %d attempts, executions ended %v.\n\n", rep.Budget.Order, rep.Budget.Calls, rep.Budget.Attempts, rep.Budget.Failures)
	p("Order %s (failed compensation): charged %d, refunded %d, executions ended %v.\n\n", rep.Comp.Order, rep.Comp.Charges, rep.Comp.Refunds, rep.Comp.Failures)
	for _, a := range rep.Alarms {
		state := "OK"
		if a.Fired {
			state = "ALARM"
		}
		p("Alarm %s (%s, filter `%s`): %d in the period, threshold %g: %s.\n\n", a.Name, a.Metric, a.Pattern, a.Datapoints, a.Threshold, state)
	}
	if len(rep.Timeouts) > 0 {
		p("Invocations that reached their deadline: %v\n\n", rep.Timeouts)
	}
	p("## Backpressure\n\nAt most %d executions in flight; cobro ran at most %d invocations at once (its reserved concurrency is enforced), %d refused with %s. "+
		"The last order arrived at %s; each consumer queue's peak and when it was last seen holding messages (drained), on the run's clock from the start:\n\n| Queue | Peak | at | Drained by | after the last order |\n|---|---|---|---|---|\n",
		rep.MaxExecutions, rep.PaymentSlots, rep.Throttled, lambdaapi.ErrLambdaThrottled, rep.LastArrival.Round(time.Second))
	for _, q := range rep.Queues {
		drained, after := q.Drained.Round(time.Second).String(), max(q.Drained-rep.LastArrival, 0).Round(time.Second).String()
		if q.Left > 0 {
			drained, after = fmt.Sprintf("not drained: %d messages left", q.Left), "—"
		}
		p("| %s | %d | %s | %s | %s |\n", q.Name, q.Peak, q.PeakAt.Round(time.Second), drained, after)
	}
	p("\n")
	p("## Dead-letter queues\n\n| Queue | Messages | of them copies of another's source message | Verdict of the DLQ tool |\n|---|---|---|---|\n")
	for _, d := range rep.DLQs {
		p("| %s | %d | %d | %s |\n", d.Name, d.Messages, d.Copies, d.Verdict)
	}
	p("\nEvery other DLQ of the templates is empty.\n\n")
	p("## Stock against the ledger\n\n")
	summary, differ := stockFolded(rep.Stock)
	p("%s.\n\n", summary)
	if len(differ) > 0 {
		p("| SKU | existencias | reservado | expected reservado |\n|---|---|---|---|\n")
		for _, s := range differ {
			p("| %s | %d | %d | %d |\n", s.SKU, s.Existencias, s.Reservado, s.WantReservado)
		}
		p("\n")
	}
	p("%s's %d reservations went to the stock DLQ (never counted: a reserva would make it negative).\n\n", badSKU, rep.BadSKULines)
	p("## What the run changes from the templates\n\n")
	p("Times: code-run durations ÷ %g (ExecScale), waits ÷ %g (WaitScale); see internal/e2e's package doc.\n\n", rep.ExecScale, rep.WaitScale)
	for _, o := range rep.Overrides {
		p("- %s\n", o)
	}
	if bad := rep.Check(); len(bad) > 0 {
		p("\n## Broken promises\n\n")
		for _, x := range bad {
			p("- %s\n", x)
		}
	} else {
		p("\nAll promises kept.\n")
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(did not happen)"
	}
	return s
}
