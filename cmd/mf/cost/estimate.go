package cost

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// Line is one priced item of an estimate, in USD a month.
type Line struct {
	Service string
	Item    string
	// Quantity a month, in Unit.
	Quantity float64
	Unit     string
	// Fixed does not depend on the number of orders; PerOrder scales with
	// them (at the usage model's volume).
	Fixed, PerOrder float64
	// Layer is the messaging service this line belongs to ("SNS",
	// "EventBridge", "Step Functions", "DynamoDB", "SQS"), or "".
	Layer string
	// Detail says how the quantity was counted ("3 × 730 h").
	Detail string
}

// Layers are the messaging services the design's figure priced, in the
// order the report lists them.
var Layers = []string{"SNS", "EventBridge", "Step Functions", "DynamoDB", "SQS"}

// Monthly is the line's total.
func (l Line) Monthly() float64 { return l.Fixed + l.PerOrder }

func (l Line) key() string { return l.Service + "\x00" + l.Item }

// Estimate is the monthly cost of one environment.
type Estimate struct {
	Env    string
	Stacks int
	Orders float64
	Lines  []Line
	Prices *Prices
	Usage  *Usage
	// TransitionsPerExecution is the workflow's average, from its
	// definition.
	TransitionsPerExecution float64
	// Unpriced counts the resources of types the model prices at nothing
	// and does not know to be free: a new billable type must be modelled.
	Unpriced map[string]int
	// Notes say what the estimate leaves out or assumes.
	Notes []string
}

// Fixed, PerOrder and Monthly are the estimate's totals.
func (e *Estimate) Fixed() float64    { return e.sum(func(l Line) float64 { return l.Fixed }) }
func (e *Estimate) PerOrder() float64 { return e.sum(func(l Line) float64 { return l.PerOrder }) }
func (e *Estimate) Monthly() float64  { return e.Fixed() + e.PerOrder() }

// CostPerOrder is the order-driven cost of one order, and the whole
// monthly cost shared by the month's orders.
func (e *Estimate) CostPerOrder() (variable, total float64) {
	return e.PerOrder() / e.Orders, e.Monthly() / e.Orders
}

// Layer is the monthly cost of a messaging service's lines.
func (e *Estimate) Layer(name string) float64 {
	return e.sum(func(l Line) float64 {
		if l.Layer == name {
			return l.Monthly()
		}
		return 0
	})
}

func (e *Estimate) sum(f func(Line) float64) float64 {
	s := 0.0
	for _, l := range e.Lines {
		s += f(l)
	}
	return s
}

// vol is a monthly quantity: the part that does not depend on orders and
// the part that does.
type vol struct{ fixed, order float64 }

func (v vol) add(w vol) vol          { return vol{v.fixed + w.fixed, v.order + w.order} }
func (v vol) scale(f float64) vol    { return vol{v.fixed * f, v.order * f} }
func (v vol) total() float64         { return v.fixed + v.order }
func (v vol) min(cap float64) vol    { return v.scale(math.Min(1, cap/math.Max(v.total(), 1e-12))) }
func perOrder(orders, n float64) vol { return vol{order: orders * n} }

// maxDepth bounds message propagation: a route longer than this is a loop.
const maxDepth = 12

// model holds one estimate's state while it is computed.
type model struct {
	app    *synthesized.App
	u      *Usage
	p      *Prices
	orders float64
	secs   float64
	lines  map[string]*Line
	errs   []error
	notes  []string

	queueSends  map[*synthesized.Resource]vol // messages (64 KB chunks) sent
	fnInv       map[*synthesized.Resource]vol // invocations
	fnMsgs      map[*synthesized.Resource]vol // messages handled
	fnInTrace   map[*synthesized.Resource]vol // invocations inside a traced execution
	execs       map[*synthesized.Resource]vol
	publishes   map[*synthesized.Resource]vol
	logKB       map[string]vol                   // per log group label
	logGroups   map[string]*synthesized.Resource // by label
	busEvents   map[*synthesized.Resource]vol    // custom events put, per bus
	archivedKB  map[*synthesized.Resource]vol    // per archive
	apiDest     vol
	pipeReqs    vol
	endpointKB  vol
	transitions vol
	tpe         float64
	tableReq    map[string][2]vol // per table label: WRU, RRU
	ecpu        vol
	emails      vol
	secretCalls vol
	egressGB    vol
	natGB       vol
	traces      vol
}

func (m *model) fail(format string, a ...any) {
	m.errs = append(m.errs, fmt.Errorf("cost: "+format, a...))
}

func (m *model) note(format string, a ...any) {
	n := fmt.Sprintf(format, a...)
	if !slices.Contains(m.notes, n) {
		m.notes = append(m.notes, n)
	}
}

// charge adds q (in the price's unit, counted as q.fixed and q.order) to
// the line of the price's service and item, and returns the line.
func (m *model) charge(item, priceKey string, q vol, layer string) *Line {
	p, err := m.p.Get(priceKey)
	if err != nil {
		m.errs = append(m.errs, err)
		return &Line{} // Compute fails
	}
	l := &Line{Service: p.Service, Item: item, Unit: p.Unit, Layer: layer}
	if prev, ok := m.lines[l.key()]; ok {
		l = prev
	} else {
		m.lines[l.key()] = l
	}
	l.Quantity += q.total()
	l.Fixed += q.fixed * p.PerUnit()
	l.PerOrder += q.order * p.PerUnit()
	return l
}

// Compute estimates the monthly cost of app's environment with usage u at
// prices p. A function of the templates without a usage entry, a table the
// usage names but the templates lack, or a price the table lacks is an
// error: the estimate would otherwise silently leave it out.
func Compute(app *synthesized.App, u *Usage, p *Prices) (*Estimate, error) {
	u = u.forEnvironment(app.Env)
	m := &model{
		app: app, u: u, p: p, orders: u.OrdersPerMonth, secs: u.HoursPerMonth * 3600,
		lines:      map[string]*Line{},
		queueSends: map[*synthesized.Resource]vol{},
		fnInv:      map[*synthesized.Resource]vol{}, fnMsgs: map[*synthesized.Resource]vol{}, fnInTrace: map[*synthesized.Resource]vol{},
		execs: map[*synthesized.Resource]vol{}, publishes: map[*synthesized.Resource]vol{},
		logKB: map[string]vol{}, logGroups: map[string]*synthesized.Resource{},
		busEvents: map[*synthesized.Resource]vol{}, archivedKB: map[*synthesized.Resource]vol{},
	}
	if app.Region != p.Region {
		m.fail("the templates deploy to %s, the price table is of %s", app.Region, p.Region)
	}
	for _, lg := range app.Resources("AWS::Logs::LogGroup") {
		m.logGroups[m.label(lg)] = lg
	}
	m.routeBusEvents()
	m.routeSchedules()
	m.chargeMessaging()
	m.chargeFunctions()
	m.chargeData()
	m.chargeNetwork()
	m.logSources()
	m.chargeSecurity()
	m.chargeMonitoring()
	unpriced := m.unpriced()
	if err := errors.Join(m.errs...); err != nil {
		return nil, err
	}
	e := &Estimate{Env: app.Env, Stacks: len(app.Stacks), Orders: m.orders, Prices: p, Usage: u,
		TransitionsPerExecution: m.tpe, Unpriced: unpriced, Notes: m.notes}
	for _, k := range slices.Sorted(maps.Keys(m.lines)) {
		if l := m.lines[k]; l.Monthly() > 0 || l.Quantity > 0 {
			e.Lines = append(e.Lines, *l)
		}
	}
	// The price table's order of services.
	rank := func(l Line) int {
		return slices.IndexFunc(p.List, func(pr Price) bool { return pr.Service == l.Service })
	}
	slices.SortStableFunc(e.Lines, func(a, b Line) int { return rank(a) - rank(b) })
	return e, nil
}

func prop[T any](r *synthesized.Resource, name string) T {
	v, _ := r.Properties[name].(T)
	return v
}

func chunks(kb float64) float64 { return math.Max(1, math.Ceil(kb/64)) }

func (m *model) unpriced() map[string]int {
	out := map[string]int{}
	for _, tpl := range m.app.Stacks {
		for _, r := range tpl.Resources {
			if _, free := m.p.Free[r.Type]; !priced[r.Type] && !free && !strings.HasPrefix(r.Type, "Custom::") {
				out[r.Type]++
			}
		}
	}
	return out
}

// priced are the types the model prices (directly or through the messages
// that reach them).
var priced = map[string]bool{
	"AWS::SQS::Queue": true, "AWS::SNS::Topic": true, "AWS::Events::EventBus": true, "AWS::Events::Archive": true,
	"AWS::Events::ApiDestination": true, "AWS::Pipes::Pipe": true, "AWS::Scheduler::Schedule": true, "AWS::Events::Rule": true,
	"AWS::StepFunctions::StateMachine": true, "AWS::DynamoDB::Table": true, "AWS::Lambda::Function": true,
	"AWS::ElastiCache::ServerlessCache": true, "AWS::RDS::DBCluster": true, "AWS::RDS::DBInstance": true, "AWS::RDS::DBProxy": true,
	"AWS::EC2::NatGateway": true, "AWS::EC2::EIP": true, "AWS::EC2::VPCEndpoint": true, "AWS::EC2::FlowLog": true,
	"AWS::KMS::Key": true, "AWS::CloudWatch::Alarm": true, "AWS::CloudWatch::CompositeAlarm": true, "AWS::CloudWatch::Dashboard": true,
	"AWS::Logs::LogGroup": true, "AWS::SecretsManager::Secret": true, "AWS::Events::Connection": true,
	"AWS::SES::ConfigurationSet": true, "AWS::SNS::Subscription": true, "AWS::Lambda::EventSourceMapping": true,
}
