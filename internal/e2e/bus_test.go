package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/synthesized"
	"github.com/mercadofresco/integration/synthesized/eventpattern"
	"golang.org/x/time/rate"
)

// Bus plays EventBridge (the rules of every bus in the templates, the
// default bus's included, their SQS, SNS, API destination and log targets
// with retry policy and dead-letter queue), SNS (the topics'
// subscriptions) and EventBridge Pipes (the carts pipe's filter and input
// template), from the templates. Copies is how many times each delivery
// is made: at-least-once delivery made visible.
type Bus struct {
	w      *World
	Copies int

	rules  []*Rule
	topics map[string]*Topic // by ARN
	pipes  []*Pipe
	apis   map[*synthesized.Resource]*apiDestination

	routed    atomic.Int64 // events put on a bus
	stop      context.Context
	cancel    context.CancelFunc
	abandoned atomic.Int64 // deliveries still retrying when the run stopped
	inflight  sync.WaitGroup
	pending   atomic.Int64
	webhook   *http.Client
}

// Rule is one AWS::Events::Rule.
type Rule struct {
	Name, Bus string
	Pattern   *eventpattern.Pattern
	Targets   []*Target
}

// Target is one target of a rule.
type Target struct {
	ID, ARN     string
	Rule        *Rule
	Queue       *Queue // SQS target
	Topic       *Topic // SNS target
	API         *apiDestination
	Log         bool // CloudWatch Logs target: accepted, not kept
	DLQ         *Queue
	MaxRetries  int
	MaxAge      time.Duration
	Transformer *transformer
	GroupID     string
	Headers     map[string]string
}

type apiDestination struct {
	Endpoint, Method string
	limiter          *rate.Limiter
	connectionKey    string
	connectionHeader string
}

// Topic is one SNS topic's subscriptions.
type Topic struct {
	Subs []*Subscription
}

// Subscription is an SQS subscription of a topic, with raw message
// delivery.
type Subscription struct {
	Queue *Queue
	DLQ   *Queue
}

// Pipe is an EventBridge pipe from a DynamoDB stream to a bus.
type Pipe struct {
	Name       string
	Filters    []*eventpattern.Pattern
	Template   string
	Bus        string
	Source     string
	DetailType string
}

// loadBus reads the rules, topics, subscriptions, API destinations and
// pipes from the app's graph (synthesized.Edges).
func (w *World) loadBus() *Bus {
	b := &Bus{w: w, Copies: 2, topics: map[string]*Topic{}, apis: map[*synthesized.Resource]*apiDestination{},
		webhook: &http.Client{Timeout: 5 * time.Second}}
	b.stop, b.cancel = context.WithCancel(context.Background())
	rules := map[*synthesized.Resource]*Rule{}
	for _, e := range w.app.Edges() {
		switch e.Kind {
		case synthesized.RuleTarget:
			r := rules[e.Via]
			if r == nil {
				r = b.loadRule(e)
				rules[e.Via] = r
				b.rules = append(b.rules, r)
			}
			if s := str(e.Via.Prop("State")); s == "" || s == "ENABLED" {
				r.Targets = append(r.Targets, b.loadTarget(r, e))
			}
		case synthesized.Subscription:
			m := w.resolve(e.Via, e.Settings).(map[string]any)
			switch {
			case m["Protocol"] == "email":
				continue // the alerts topic's operators
			case m["Protocol"] != "sqs" || w.queueByResource[e.To] == nil:
				w.fatalf("%s: a subscription by %v to %s is not played", e.Via.Path(), m["Protocol"], e.Target)
			case m["FilterPolicy"] != nil:
				w.fatalf("%s: subscription filter policies are not played", e.Via.Path())
			case m["RawMessageDelivery"] != true:
				w.fatalf("%s: only raw message delivery is played", e.Via.Path())
			}
			s := &Subscription{Queue: w.queueByResource[e.To], DLQ: w.queueByResource[e.DLQ]}
			t := b.topic(e.From)
			t.Subs = append(t.Subs, s)
		case synthesized.Pipe:
			b.pipes = append(b.pipes, b.loadPipe(e))
		}
	}
	return b
}

// topic is r's Topic.
func (b *Bus) topic(r *synthesized.Resource) *Topic {
	arn, err := b.w.Physical().Ref(r)
	if err != nil {
		b.w.fatalf("%v", err)
	}
	if b.topics[arn] == nil {
		b.topics[arn] = &Topic{}
	}
	return b.topics[arn]
}

func str(v any) string { s, _ := v.(string); return s }

// loadRule reads the rule of a rule target edge: its bus and its pattern.
func (b *Bus) loadRule(e *synthesized.Edge) *Rule {
	w, r := b.w, e.Via
	rule := &Rule{Name: w.name(r), Bus: "default"}
	if e.From != nil {
		rule.Bus = w.name(e.From)
	}
	if r.Prop("EventPattern") == nil {
		w.fatalf("%s: scheduled rules are not played", r.Path())
	}
	var err error
	if rule.Pattern, err = w.app.Pattern(r.Stack, r.Prop("EventPattern")); err != nil {
		w.fatalf("%s: %v", r.Path(), err)
	}
	return rule
}

// loadTarget reads one target of rule: its receiver, retry policy,
// dead-letter queue and input.
func (b *Bus) loadTarget(rule *Rule, e *synthesized.Edge) *Target {
	w := b.w
	tm := w.resolve(e.Via, e.Settings).(map[string]any)
	t := &Target{ID: str(tm["Id"]), ARN: str(tm["Arn"]), Rule: rule, MaxRetries: 185, MaxAge: 24 * time.Hour, DLQ: w.queueByResource[e.DLQ]}
	switch {
	case w.queueByResource[e.To] != nil:
		t.Queue = w.queueByResource[e.To]
	case e.To != nil && e.To.Type == "AWS::SNS::Topic":
		t.Topic = b.topic(e.To)
	case e.To != nil && e.To.Type == "AWS::Events::ApiDestination":
		t.API = b.apiDestination(e.To)
	case strings.HasPrefix(t.ARN, "arn:aws:logs:"):
		t.Log = true
	default:
		w.fatalf("%s: target %s is of a kind the run does not play", e.Via.Path(), t.ARN)
	}
	if rp, ok := tm["RetryPolicy"].(map[string]any); ok {
		if n, ok := rp["MaximumRetryAttempts"].(float64); ok {
			t.MaxRetries = int(n)
		}
		t.MaxAge = seconds(rp["MaximumEventAgeInSeconds"], t.MaxAge)
	}
	if tm["Input"] != nil || tm["InputPath"] != nil {
		w.fatalf("%s: constant target input and input paths are not played", e.Via.Path())
	}
	if it, ok := tm["InputTransformer"].(map[string]any); ok {
		t.Transformer = &transformer{Paths: map[string]string{}, Template: str(it["InputTemplate"])}
		ipm, _ := it["InputPathsMap"].(map[string]any)
		for k, v := range ipm {
			t.Transformer.Paths[k] = str(v)
		}
	}
	t.GroupID = str(synthesized.Dig(tm, "SqsParameters", "MessageGroupId"))
	if hp, ok := tm["HttpParameters"].(map[string]any); ok {
		t.Headers = map[string]string{}
		hh, _ := hp["HeaderParameters"].(map[string]any)
		for k, v := range hh {
			t.Headers[k] = str(v)
		}
		if _, ok := hp["QueryStringParameters"]; ok {
			w.fatalf("%s: query string parameters are not played", e.Via.Path())
		}
	}
	return t
}

// apiDestination reads the API destination r: its endpoint, method and
// rate (one limiter, whichever targets share it) and its connection's API
// key.
func (b *Bus) apiDestination(r *synthesized.Resource) *apiDestination {
	if d := b.apis[r]; d != nil {
		return d
	}
	w := b.w
	m := w.resolve(r, r.Properties).(map[string]any)
	d := &apiDestination{Method: str(m["HttpMethod"]), Endpoint: str(m["InvocationEndpoint"])}
	if perSecond, ok := m["InvocationRateLimitPerSecond"].(float64); ok { // burst: one second's
		perSecond *= w.opts.WaitScale
		d.limiter = rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)))
	}
	for _, c := range w.app.From(r, synthesized.Connection) {
		d.connectionHeader, d.connectionKey = w.connectionAPIKey(c.To)
	}
	if d.connectionHeader == "" {
		w.fatalf("%s: no connection with API key auth", r.Path())
	}
	b.apis[r] = d
	return d
}

// loadPipe reads a pipe edge: only a pipe to a bus without enrichment is
// played.
func (b *Bus) loadPipe(e *synthesized.Edge) *Pipe {
	w, r := b.w, e.Via
	raw, _ := json.Marshal(w.resolve(r, e.Settings))
	var spec struct {
		Name             string
		SourceParameters struct {
			FilterCriteria struct{ Filters []struct{ Pattern string } }
		}
		TargetParameters struct {
			InputTemplate                 string
			EventBridgeEventBusParameters struct{ DetailType, Source string }
		}
		Enrichment string
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		w.fatalf("%s: %v", r.Path(), err)
	}
	if spec.Enrichment != "" || e.To == nil || e.To.Type != "AWS::Events::EventBus" {
		w.fatalf("%s: only pipes to a bus without enrichment are played", r.Path())
	}
	params := spec.TargetParameters
	pipe := &Pipe{Name: spec.Name, Template: params.InputTemplate, Bus: w.name(e.To),
		Source: params.EventBridgeEventBusParameters.Source, DetailType: params.EventBridgeEventBusParameters.DetailType}
	for _, f := range spec.SourceParameters.FilterCriteria.Filters {
		pat, err := eventpattern.Compile([]byte(f.Pattern))
		if err != nil {
			w.fatalf("%s: filter: %v", r.Path(), err)
		}
		pipe.Filters = append(pipe.Filters, pat)
	}
	return pipe
}

// busName is the name of a bus named by its name or ARN ("default" for
// none).
func busName(v string) string {
	if i := strings.LastIndex(v, ":event-bus/"); i >= 0 {
		return v[i+len(":event-bus/"):]
	}
	return cmp.Or(v, "default")
}

// Route implements localaws.Router: the event goes to every matching rule's
// targets of its bus, Copies times each, asynchronously (as EventBridge
// delivers after PutEvents has answered).
func (b *Bus) Route(_ context.Context, e localaws.Event) error {
	b.routed.Add(1)
	bus := busName(e.EventBusName)
	env := e.Envelope(b.w.opts.Account, b.w.opts.Region)
	raw, err := json.Marshal(env)
	if err != nil {
		return err
	}
	var generic map[string]any
	_ = json.Unmarshal(raw, &generic)
	for _, r := range b.rules {
		if r.Bus != bus || !r.Pattern.MatchValue(generic) {
			continue
		}
		for _, t := range r.Targets {
			for range b.Copies {
				b.inflight.Add(1)
				b.pending.Add(1)
				go func() {
					defer b.inflight.Done()
					defer b.pending.Add(-1)
					b.deliver(t, generic, raw, e.Time)
				}()
			}
		}
	}
	return nil
}

// Routed is the number of events put on a bus so far.
func (b *Bus) Routed() int64 { return b.routed.Load() }

// Pending is the number of deliveries not finished.
func (b *Bus) Pending() int64 { return b.pending.Load() }

// Stop ends the deliveries still retrying (counted as abandoned) and waits
// for every delivery begun.
func (b *Bus) Stop() {
	b.cancel()
	b.inflight.Wait()
}

// Abandoned is the number of deliveries Stop ended.
func (b *Bus) Abandoned() int64 { return b.abandoned.Load() }

// errNoRetry marks a delivery failure EventBridge does not retry (a 4xx
// other than 429 from an API destination).
var errNoRetry = errors.New("not retryable")

func (b *Bus) deliver(t *Target, event map[string]any, raw []byte, at time.Time) {
	ctx := b.stop
	input, err := t.input(event, raw)
	if err != nil {
		b.deadLetter(t, raw, "INPUT_TRANSFORMATION_FAILED", err, 0)
		return
	}
	backoff := time.Second
	for attempt := 0; ; attempt++ {
		err = b.send(ctx, t, event, input)
		if err == nil {
			return
		}
		if errors.Is(err, errNoRetry) || attempt >= t.MaxRetries || b.w.clock.Now().Sub(at) > t.MaxAge {
			b.deadLetter(t, raw, "RETRIES_EXHAUSTED", err, attempt)
			return
		}
		if b.w.clock.Sleep(ctx, b.w.jitter(backoff)) != nil {
			b.abandoned.Add(1)
			return
		}
		backoff = min(backoff*2, 3*time.Minute)
	}
}

func (b *Bus) send(ctx context.Context, t *Target, event map[string]any, input []byte) error {
	switch {
	case t.Queue != nil:
		in := &sqs.SendMessageInput{QueueUrl: &t.Queue.URL, MessageBody: aws.String(string(input))}
		if t.Queue.FIFO {
			id, _ := event["id"].(string)
			in.MessageGroupId, in.MessageDeduplicationId = &t.GroupID, &id
		}
		_, err := b.w.sqs.SendMessage(ctx, in)
		return err
	case t.Topic != nil:
		_, err := t.Topic.publish(b, string(input), nil)
		return err
	case t.API != nil:
		return b.callAPI(ctx, t, event, input)
	case t.Log:
		return nil
	}
	return fmt.Errorf("target %s has no kind", t.ID)
}

// callAPI invokes an API destination: the endpoint's path on the local
// ERP webhook fake, the connection's API key header, the rule's header
// parameters, at the destination's rate.
func (b *Bus) callAPI(ctx context.Context, t *Target, event map[string]any, input []byte) error {
	if t.API.limiter != nil {
		_ = t.API.limiter.Wait(ctx) // an error: ctx is done, and so is the request
	}
	u, err := url.Parse(t.API.Endpoint)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoRetry, err)
	}
	req, err := http.NewRequestWithContext(ctx, t.API.Method, b.w.deps.ERPWebhook.URL()+u.Path, bytes.NewReader(input))
	if err != nil {
		return fmt.Errorf("%w: %v", errNoRetry, err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set(t.API.connectionHeader, t.API.connectionKey)
	for k, v := range t.Headers {
		if strings.HasPrefix(v, "$.") {
			val, ok := jsonPath(event, v)
			if !ok {
				continue
			}
			if s, ok := val.(string); ok {
				v = s
			} else {
				bs, _ := json.Marshal(val)
				v = string(bs)
			}
		}
		req.Header.Set(k, v)
	}
	resp, err := b.webhook.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode == 429 || resp.StatusCode >= 500:
		return fmt.Errorf("API destination answered %d", resp.StatusCode)
	}
	return fmt.Errorf("%w: API destination answered %d", errNoRetry, resp.StatusCode)
}

// deadLetter sends the event to the target's DLQ with EventBridge's error
// attributes; without a DLQ the event is dropped and counted.
func (b *Bus) deadLetter(t *Target, raw []byte, code string, cause error, attempts int) {
	if t.DLQ == nil {
		b.w.t.Errorf("e2e: rule %s target %s dropped an event (%s: %v): no DLQ", t.Rule.Name, t.ID, code, cause)
		return
	}
	msg := cause.Error()
	attrs := map[string]types.MessageAttributeValue{
		"RULE_ARN":                  sqsbatch.StringAttribute(fmt.Sprintf("arn:aws:events:%s:%s:rule/%s/%s", b.w.opts.Region, b.w.opts.Account, t.Rule.Bus, t.Rule.Name)),
		"TARGET_ARN":                sqsbatch.StringAttribute(t.ARN),
		"ERROR_CODE":                sqsbatch.StringAttribute(code),
		"ERROR_MESSAGE":             sqsbatch.StringAttribute(msg),
		"EXHAUSTED_RETRY_CONDITION": sqsbatch.StringAttribute("MaximumRetryAttempts"),
		"RETRY_ATTEMPTS":            sqsbatch.NumberAttribute(int64(attempts)),
	}
	if _, err := b.w.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &t.DLQ.URL, MessageBody: aws.String(string(raw)), MessageAttributes: attrs}); err != nil {
		b.w.t.Errorf("e2e: DLQ %s refused an event: %v", t.DLQ.Name, err)
	}
}

func (t *Target) input(event map[string]any, raw []byte) ([]byte, error) {
	if t.Transformer != nil {
		return t.Transformer.apply(event)
	}
	return raw, nil
}

// Publish plays sns:Publish: the message goes to every subscription, Copies
// times each (raw delivery: the message as the body, its attributes as
// message attributes).
func (t *Topic) publish(b *Bus, message string, attrs map[string]types.MessageAttributeValue) (string, error) {
	for _, s := range t.Subs {
		for range b.Copies {
			in := &sqs.SendMessageInput{QueueUrl: &s.Queue.URL, MessageBody: &message, MessageAttributes: attrs}
			if _, err := b.w.sqs.SendMessage(context.Background(), in); err != nil {
				if s.DLQ == nil {
					return "", err
				}
				in.QueueUrl = &s.DLQ.URL
				_, _ = b.w.sqs.SendMessage(context.Background(), in)
			}
		}
	}
	return b.w.newID(), nil
}

// Topic returns the topic with that ARN.
func (b *Bus) Topic(arn string) *Topic { return b.topics[arn] }

// Stream feeds DynamoDB stream records (as the pipe's source delivers them)
// through every pipe: the filter from the template, then the input
// template, then the target bus.
func (b *Bus) Stream(ctx context.Context, records []map[string]any) error {
	for _, p := range b.pipes {
		for _, rec := range records {
			matched := false
			for _, f := range p.Filters {
				matched = matched || f.MatchValue(rec)
			}
			if !matched {
				continue
			}
			detail, err := pipeTemplate(p.Template, rec)
			if err != nil {
				return fmt.Errorf("pipe %s: %w", p.Name, err)
			}
			if err := b.Route(ctx, localaws.Event{ID: b.w.newID(), EventBusName: p.Bus, Source: p.Source, DetailType: p.DetailType,
				Detail: string(detail), Time: b.w.clock.Now()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// transformer is an EventBridge input transformer.
type transformer struct {
	Paths    map[string]string
	Template string
}

func (tr *transformer) apply(event map[string]any) ([]byte, error) {
	vals := map[string]any{}
	for k, p := range tr.Paths {
		if v, ok := jsonPath(event, p); ok {
			vals[k] = v
		}
	}
	return fillTemplate(tr.Template, func(name string) (any, bool) { v, ok := vals[name]; return v, ok })
}

func pipeTemplate(tpl string, rec map[string]any) ([]byte, error) {
	return fillTemplate(tpl, func(name string) (any, bool) {
		if !strings.HasPrefix(name, "$.") {
			return nil, false
		}
		return jsonPath(rec, name)
	})
}

// fillTemplate replaces <name> placeholders as EventBridge does: inside a
// JSON string a string value goes in as is; elsewhere the value's JSON.
// A placeholder without a value becomes null (or nothing inside a string).
// A result that is not JSON is an error.
func fillTemplate(tpl string, value func(string) (any, bool)) ([]byte, error) {
	var out bytes.Buffer
	inString := false
	for i := 0; i < len(tpl); i++ {
		c := tpl[i]
		switch {
		case c == '\\' && inString && i+1 < len(tpl):
			out.WriteByte(c)
			out.WriteByte(tpl[i+1])
			i++
			continue
		case c == '"':
			inString = !inString
		case c == '<':
			if j := strings.IndexByte(tpl[i:], '>'); j > 0 {
				name := tpl[i+1 : i+j]
				if v, ok := value(name); ok || isPlaceholder(name) {
					switch {
					case !ok && inString:
					case !ok:
						out.WriteString("null")
					case inString:
						if s, isStr := v.(string); isStr {
							b, _ := json.Marshal(s)
							out.Write(b[1 : len(b)-1])
						} else {
							b, _ := json.Marshal(v)
							out.Write(b)
						}
					default:
						b, _ := json.Marshal(v)
						out.Write(b)
					}
					i += j
					continue
				}
			}
		}
		out.WriteByte(c)
	}
	if !json.Valid(out.Bytes()) {
		return nil, fmt.Errorf("input template produced invalid JSON: %s", out.Bytes())
	}
	return out.Bytes(), nil
}

func isPlaceholder(name string) bool {
	return name != "" && !strings.ContainsAny(name, " <\"")
}

// jsonPath evaluates the dotted JSON paths the templates use ($ or
// $.a.b): the value, and whether it is there.
func jsonPath(v any, path string) (any, bool) {
	if path == "$" {
		return v, true
	}
	keys, ok := strings.CutPrefix(path, "$.")
	if !ok {
		return nil, false
	}
	v = synthesized.Dig(v, strings.Split(keys, ".")...)
	return v, v != nil
}

// The input transformer and the pipe's template fill placeholders as
// EventBridge does: a string inside quotes goes in as is, anything else as
// its JSON.
func TestFillTemplate(t *testing.T) {
	event := map[string]any{"detail": map[string]any{"id": "e-1", "n": 3.0, "lineas": []any{map[string]any{"sku": "A"}}, "q": `di "hola"`}}
	tr := &transformer{Paths: map[string]string{"id": "$.detail.id", "n": "$.detail.n", "l": "$.detail.lineas", "q": "$.detail.q", "none": "$.detail.x"},
		Template: `{"id":<id>,"n":<n>,"l":<l>,"s":"pedido <id> de <n>","q":"<q>","none":<none>,"lt":"a < b"}`}
	out, err := tr.apply(event)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	want := map[string]any{"id": "e-1", "n": 3.0, "s": "pedido e-1 de 3", "q": `di "hola"`, "none": nil, "lt": "a < b"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v (%s)", k, got[k], v, out)
		}
	}
	if l, ok := got["l"].([]any); !ok || len(l) != 1 {
		t.Errorf("l = %#v", got["l"])
	}
	rec := map[string]any{"eventID": "x1", "dynamodb": map[string]any{"Keys": map[string]any{"carrito_id": map[string]any{"S": "C-1"}}}}
	b, err := pipeTemplate(`{"id":"<$.eventID>","carrito":"<$.dynamodb.Keys.carrito_id.S>"}`, rec)
	if err != nil || string(b) != `{"id":"x1","carrito":"C-1"}` {
		t.Fatalf("pipe template: %s, %v", b, err)
	}
}

func TestJSONPath(t *testing.T) {
	v := map[string]any{"a": map[string]any{"b": "x", "c": []any{"y"}}}
	for path, want := range map[string]any{"$.a.b": "x", "$": v} {
		if got, ok := jsonPath(v, path); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, %v", path, got, ok)
		}
	}
	for _, path := range []string{"$.a.d", "a.b", "$.a.b.c", "$.a.c.0"} {
		if _, ok := jsonPath(v, path); ok {
			t.Errorf("%s resolved", path)
		}
	}
}
