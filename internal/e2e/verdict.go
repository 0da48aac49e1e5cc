package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/payment"
	"github.com/mercadofresco/integration/synthesized"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// An external dependency's effects, as its fakes' ledgers record them.
const (
	depGateway   = "gateway charges"
	depWarehouse = "warehouse preparations"
	depEmail     = "e-mails (SES + secondary)"
	depERP       = "ERP notices"
)

var dependencyOrder = []string{depGateway, depWarehouse, depEmail, depERP}

// ledger is one dependency's view for the verdict: the 2xx effects per
// order, the uncertain outcomes per order (why a repeat was allowed), the
// project's deliveries to the code that calls it and the key store's counts.
type ledger struct {
	effects   map[string][]localaws.Effect
	uncertain map[string][]string
	layer     LayerLine
}

// LayerLine says how much each layer absorbed for one dependency: the
// deliveries the project's code received (queue messages, task
// invocations), the requests that reached the dependency, its distinct
// keys, its effects and its key store's replays.
type LayerLine struct {
	Dependency                          string
	Deliveries, Requests, Keys, Effects int
	Replayed, MaxRequestsPerKey         int
	DeliveredBy                         string
}

// Duplicate is an order with more than one effect at a dependency.
type Duplicate struct {
	Dependency, Order string
	Effects           int
	Requests          []string // the requests that produced the effects
	Uncertain         []string // the uncertain outcomes that allow repeats
}

// orderKey extracts the order of an effect.
type orderKey func(localaws.Effect) string

func effectsByOrder(s *localaws.Service, key orderKey, match func(localaws.Effect) bool) map[string][]localaws.Effect {
	out := map[string][]localaws.Effect{}
	for _, e := range s.Effects() {
		if e.Response.Status >= 200 && e.Response.Status < 300 && (match == nil || match(e)) {
			out[key(e)] = append(out[key(e)], e)
		}
	}
	return out
}

// lostAnswers adds, per order, the requests whose effect ran and whose
// answer the caller never got.
func lostAnswers(into map[string][]string, s *localaws.Service, order func([]byte) string, match func(localaws.Record) bool) {
	for _, r := range s.Requests() {
		if r.AnswerLost && (match == nil || match(r)) {
			p := order(r.Body)
			how := r.Fault
			if how == "" {
				how = "the caller went away"
			}
			into[p] = append(into[p], fmt.Sprintf("answer lost after the effect (request #%d: %s)", r.Seq, how))
		}
	}
}

func keyCounts(l *LayerLine, servers []*localaws.Service, match func(localaws.Record) bool) {
	perKey := map[string]int{}
	for _, s := range servers {
		for _, r := range s.Requests() {
			if match != nil && !match(r) {
				continue
			}
			if !r.Effect && !r.Replayed {
				continue // refused before the key store (faults, auth)
			}
			l.Requests++
			if r.IdempotencyKey != "" {
				perKey[r.IdempotencyKey]++
			}
			if r.Effect {
				l.Effects++
			}
			if r.Replayed {
				l.Replayed++
			}
		}
	}
	l.Keys = len(perKey)
	for _, n := range perKey {
		l.MaxRequestsPerKey = max(l.MaxRequestsPerKey, n)
	}
}

var orderIDPattern = regexp.MustCompile(`P-\d{5}-[0-9a-f]{4}`)

// ledgers reads every dependency's ledger, with the uncertain outcomes the
// scenario caused: answers lost after the effect (the gateway's timeout
// after the charge, a kill between the effect and its answer) and every
// order of the batch in flight in the killed consumer.
func (r *Run) ledgers(results []localaws.ExecutionResult) map[string]*ledger {
	d := r.w.deps
	isCharge := func(q localaws.Record) bool { return q.Path == payment.PathCobros }
	sesOrder := func(b []byte) string { return localaws.SESTag(b, "pedido_id") }
	out := map[string]*ledger{}
	mk := func(name string, eff map[string][]localaws.Effect) *ledger {
		l := &ledger{effects: eff, uncertain: map[string][]string{}, layer: LayerLine{Dependency: name}}
		out[name] = l
		return l
	}
	g := mk(depGateway, effectsByOrder(d.Gateway.Service, func(e localaws.Effect) string { return pedidoOf(e.Body) },
		func(e localaws.Effect) bool { return e.Path == payment.PathCobros }))
	lostAnswers(g.uncertain, d.Gateway.Service, pedidoOf, isCharge)
	keyCounts(&g.layer, []*localaws.Service{d.Gateway.Service}, isCharge)
	for _, res := range results {
		g.layer.Deliveries += res.CallCount("Cobrar")
	}
	g.layer.DeliveredBy = "Cobrar task invocations"

	wh := mk(depWarehouse, effectsByOrder(d.Almacen, func(e localaws.Effect) string { return pedidoOf(e.Body) }, nil))
	lostAnswers(wh.uncertain, d.Almacen, pedidoOf, nil)
	for _, p := range r.kill.Batch { // the killed order's own lost answer is the same outcome
		if len(wh.uncertain[p]) == 0 {
			wh.uncertain[p] = append(wh.uncertain[p], "in the batch of the preparation consumer killed between its effect and its completion record")
		}
	}
	keyCounts(&wh.layer, []*localaws.Service{d.Almacen}, nil)

	em := mk(depEmail, effectsByOrder(d.SES.Service, func(e localaws.Effect) string { return sesOrder(e.Body) }, nil))
	for p, e := range effectsByOrder(d.Correo2, func(e localaws.Effect) string { return pedidoOf(e.Body) }, nil) {
		em.effects[p] = append(em.effects[p], e...)
	}
	lostAnswers(em.uncertain, d.SES.Service, sesOrder, nil)
	lostAnswers(em.uncertain, d.Correo2, pedidoOf, nil)
	keyCounts(&em.layer, []*localaws.Service{d.SES.Service, d.Correo2}, nil)

	erp := mk(depERP, effectsByOrder(d.ERP, func(e localaws.Effect) string { return pedidoOf(e.Body) }, nil))
	lostAnswers(erp.uncertain, d.ERP, pedidoOf, nil)
	keyCounts(&erp.layer, []*localaws.Service{d.ERP}, nil)

	// The project's clients report each attempt that got no answer (a read
	// timeout, the invocation's deadline, a broken connection): on a loaded
	// machine the scenario's timing makes more of them than it injects, and
	// each is an uncertain outcome of the same kind as the injected ones.
	for p, by := range clientsGaveUp(r.w.opts.Logs) {
		for dep, why := range by {
			if l := out[dep]; l != nil {
				l.uncertain[p] = append(l.uncertain[p], why...)
			}
		}
	}
	for _, e := range r.esms {
		var l *ledger
		switch e.Fn.Entry {
		case "lambdas/preparar-pedido":
			l = wh
		case "lambdas/correo-confirmacion":
			l = em
		case "lambdas/aviso-erp":
			l = erp
		default:
			continue
		}
		l.layer.Deliveries += int(e.delivered.Load())
		l.layer.DeliveredBy = "deliveries from " + e.Queue.Name
	}
	return out
}

// duplicates lists the orders with more than one effect at a dependency,
// with the requests that produced them and the uncertain outcomes that
// allow them.
func duplicates(ls map[string]*ledger, ids []string) []Duplicate {
	var out []Duplicate
	for _, name := range dependencyOrder {
		l := ls[name]
		for _, id := range ids {
			eff := l.effects[id]
			if len(eff) < 2 {
				continue
			}
			d := Duplicate{Dependency: name, Order: id, Effects: len(eff), Uncertain: l.uncertain[id]}
			for _, e := range eff {
				d.Requests = append(d.Requests, fmt.Sprintf("#%d at %s of the run's clock, key %q", e.Seq, e.At.Format("15:04:05.000"), e.IdempotencyKey))
			}
			out = append(out, d)
		}
	}
	return out
}

// unexplained is the verdict on duplicates: with keys honoured, none is
// allowed; with keys ignored, an order may have one extra effect per
// uncertain outcome of its own at that dependency, and no other.
func (rep *Report) unexplained() []string {
	var bad []string
	for _, d := range rep.Duplicates {
		switch {
		case !rep.IgnoreKeys:
			bad = append(bad, fmt.Sprintf("order %s: %d %s with the dependencies honouring Idempotency-Key (requests %s)", d.Order, d.Effects, d.Dependency, strings.Join(d.Requests, ", ")))
		case d.Effects-1 > len(d.Uncertain):
			bad = append(bad, fmt.Sprintf("order %s: %d %s, %d more than its %d uncertain outcomes allow; requests %s",
				d.Order, d.Effects, d.Dependency, d.Effects-1-len(d.Uncertain), len(d.Uncertain), strings.Join(d.Requests, ", ")))
		}
	}
	return bad
}

// uncertainList is the scenario's uncertain outcomes, "dependency: order
// (reason)", sorted.
func uncertainList(ls map[string]*ledger) []string {
	var out []string
	for _, name := range dependencyOrder {
		for p, why := range ls[name].uncertain {
			out = append(out, fmt.Sprintf("%s: %s (%s)", name, p, strings.Join(why, "; ")))
		}
	}
	sort.Strings(out)
	return out
}

// AlarmLine is one alarm of the templates the run models, from the
// metric its metric filter would produce on the run's executions.
type AlarmLine struct {
	Name, Metric, Pattern string
	Datapoints            int
	Threshold             float64
	Fired                 bool
	Error                 string
}

var filterTerm = regexp.MustCompile(`^\(\$\.([A-Za-z0-9_.]+) = "([^"]*)"\)$`)

// matchFilter evaluates a CloudWatch Logs JSON filter pattern made of
// equality terms joined by && ({ ($.a = "x") && ($.b.c = "y") }), the form
// the templates use; any other form is an error, not a miss.
func matchFilter(pattern string, event map[string]any) (bool, error) {
	p := strings.TrimSpace(pattern)
	if !strings.HasPrefix(p, "{") || !strings.HasSuffix(p, "}") {
		return false, fmt.Errorf("filter pattern %q is not a JSON pattern", pattern)
	}
	for _, term := range strings.Split(strings.TrimSpace(p[1:len(p)-1]), "&&") {
		m := filterTerm.FindStringSubmatch(strings.TrimSpace(term))
		if m == nil {
			return false, fmt.Errorf("filter pattern %q: term %q is not modelled", pattern, term)
		}
		v, ok := jsonPath(event, "$."+m[1])
		if s, _ := v.(string); !ok || s != m[2] {
			return false, nil
		}
	}
	return true, nil
}

// stateMachineLogAlarms models the alarms on the metric filters of the
// state machines' log groups: for each failed execution, the
// FailStateEntered event of the Fail state it ended in (the one whose
// static Error is the execution's error), run through each filter, summed
// and compared with its alarm's threshold over one period (the run is
// shorter than the 5-minute period).
func (w *World) stateMachineLogAlarms(results []localaws.ExecutionResult) []AlarmLine {
	failStates := map[string]string{} // error -> Fail state name
	for _, def := range w.sfn.Definitions {
		synthesized.WalkStates(def, func(name string, st map[string]any) {
			if e, ok := st["Error"].(string); ok && st["Type"] == "Fail" {
				failStates[e] = name
			}
		})
	}
	var events []map[string]any
	for _, res := range results {
		if name, ok := failStates[res.Error]; ok && res.Status == "FAILED" {
			events = append(events, map[string]any{"type": "FailStateEntered", "execution_arn": res.ARN,
				"details": map[string]any{"name": name}})
		}
	}
	var out []AlarmLine
	for _, mf := range w.app.Resources("AWS::Logs::MetricFilter") {
		pattern, _ := mf.Prop("FilterPattern").(string)
		trs, _ := mf.Prop("MetricTransformations").([]any)
		if len(trs) != 1 {
			continue
		}
		tr, _ := trs[0].(map[string]any)
		metric, ns := str(tr["MetricName"]), str(tr["MetricNamespace"])
		if !strings.Contains(pattern, "FailStateEntered") {
			continue // not on a state machine's log
		}
		for _, a := range w.app.Resources("AWS::CloudWatch::Alarm") {
			if str(a.Prop("MetricName")) != metric || str(a.Prop("Namespace")) != ns {
				continue
			}
			line := AlarmLine{Name: a.Path(), Metric: ns + "/" + metric, Pattern: pattern}
			line.Threshold, _ = a.Prop("Threshold").(float64)
			for _, ev := range events {
				ok, err := matchFilter(pattern, ev)
				if err != nil {
					line.Error = err.Error()
					break
				}
				if ok {
					line.Datapoints++
				}
			}
			n := float64(line.Datapoints)
			switch str(a.Prop("ComparisonOperator")) {
			case "GreaterThanThreshold":
				line.Fired = n > line.Threshold
			case "GreaterThanOrEqualToThreshold":
				line.Fired = n >= line.Threshold
			default:
				line.Error = "comparison " + str(a.Prop("ComparisonOperator")) + " is not modelled"
			}
			out = append(out, line)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// circuitSummary summarises the CircuitoAbierto failures: the orders whose
// first attempt failed with it, how many of them were paid on a later
// attempt, and how long their customers waited (simulated time, from the
// first attempt's failure to the execution that succeeded).
func (r *Run) circuitSummary() CircuitSummary {
	var s CircuitSummary
	r.mu.Lock()
	defer r.mu.Unlock()
	var waits []time.Duration
	for _, id := range r.ids {
		o := r.orders[id]
		if len(o.Failures) == 0 || o.Failures[0] != "CircuitoAbierto" {
			continue
		}
		s.FirstAttempts++
		if o.Succeeded {
			s.PaidLater++
			s.Retries += o.Intentos - 1
			if !o.failedAt.IsZero() && !o.succeededAt.IsZero() {
				waits = append(waits, o.succeededAt.Sub(o.failedAt))
			}
		}
	}
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	if n := len(waits); n > 0 {
		s.MedianWait, s.MaxWait = waits[n/2], waits[n-1]
	}
	return s
}

// CircuitSummary is the report's account of the CircuitoAbierto failures.
type CircuitSummary struct {
	FirstAttempts, PaidLater, Retries int
	MedianWait, MaxWait               time.Duration
}

// stockFolded renders the stock table as one line when every counted SKU
// matches its ledger, and lists only the SKUs that differ otherwise.
func stockFolded(lines []StockLine) (summary string, differ []StockLine) {
	var reserved, want, badEx, badRes int64
	counted := 0
	for _, s := range lines {
		if s.SKU == badSKU {
			badEx, badRes = s.Existencias, s.Reservado
			if s.Existencias != 0 || s.Reservado != 0 {
				differ = append(differ, s)
			}
			continue
		}
		counted++
		reserved += s.Reservado
		want += s.WantReservado
		if s.Existencias != s.WantExistencias || s.Reservado != s.WantReservado {
			differ = append(differ, s)
		}
	}
	return fmt.Sprintf("%d SKUs counted, existencias %d each as seeded, reservado %d in all against %d expected; %s: existencias %d, reservado %d",
		counted, initial, reserved, want, badSKU, badEx, badRes), differ
}

// noAnswer matches the errors of the project's HTTP clients for an attempt
// that got no answer (httpdep: read timeout, the caller's deadline, a
// broken connection).
var noAnswer = regexp.MustCompile(`no answer within|deadline exceeded|context canceled|connection reset|EOF`)

// keyDependency maps an idempotency key's prefix to the dependency its
// calls reach.
var keyDependency = map[string]string{"cobro": depGateway, "preparacion": depWarehouse, "correo-confirmacion": depEmail, "aviso-erp": depERP}

// clientsGaveUp reads the functions' log (when logs is a file) for the
// attempts the clients report as unanswered, by order and dependency.
func clientsGaveUp(logs any) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	named, ok := logs.(interface{ Name() string })
	if !ok {
		return out
	}
	f, err := os.Open(named.Name())
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), `"attempt failed"`) {
			continue
		}
		var rec struct {
			Msg, Error string
			Key        string `json:"idempotency_key"`
			Attempt    int
		}
		if json.Unmarshal(line, &rec) != nil || rec.Msg != "attempt failed" || !noAnswer.MatchString(rec.Error) {
			continue
		}
		prefix, _, _ := strings.Cut(rec.Key, ":")
		dep, order := keyDependency[prefix], orderIDPattern.FindString(rec.Key)
		if dep == "" || order == "" {
			continue
		}
		if out[order] == nil {
			out[order] = map[string][]string{}
		}
		out[order][dep] = append(out[order][dep], fmt.Sprintf("the client got no answer (attempt %d: %s)", rec.Attempt, string(first([]rune(rec.Error), 120))))
	}
	return out
}
