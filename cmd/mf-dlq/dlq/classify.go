package dlq

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// Classification (runbook step 2): the rules, in order of authority, and
// their thresholds are docs/design.md#dlq-classify and #dlq-tool.

// Verdict is a classification; Empty is reported for no messages, Mixed
// for more than one class.
type Verdict string

// The verdicts.
const (
	Poison    Verdict = "poison"
	Transient Verdict = "transient"
	Data      Verdict = "data"
	Expired   Verdict = "expired"
	Mixed     Verdict = "mixed"
	Empty     Verdict = "empty"
)

// Options are the expectations a message is classified against
// (ConsumerOptions).
type Options struct {
	// Consumer is the registry's entry of the queue's consumer: the
	// versions it accepts (default {1}) at VersionKey (default "version";
	// "-": not checked), the keys it requires, its replay window from
	// CreatedAtKey (zero: only its own expired verdict counts) and its
	// Content check (a body it refuses is poison; nil: only the envelope).
	consumers.Consumer
	// Now is when ages are measured; default the wall clock.
	Now time.Time
	// SourceMaxReceives maps a source queue's ARN to its maxReceiveCount:
	// the receives a message SQS moved from it had when it was moved.
	SourceMaxReceives map[string]int
}

// The thresholds of a burst and of a concentration (design.md#dlq-tool).
const (
	burstWindow        = 6 * time.Hour
	concentrationShare = 0.5
	minConcentrated    = 3
)

// Origin says how a message reached the DLQ: moved by SQS's redrive
// (DeadLetterQueueSourceArn), sent by a consumer with its verdict (mf-*
// attributes), or by something else (an SNS subscription, a person).
type Origin string

// The origins.
const (
	OriginRedrive  Origin = "redrive"
	OriginConsumer Origin = "consumer"
	OriginUnknown  Origin = "unknown"
)

// Message is one classified message.
type Message struct {
	MessageID string    `json:"message_id"`
	PedidoID  string    `json:"pedido_id,omitempty"` // the key of the log search and the idempotency records
	Class     Verdict   `json:"class"`
	Why       string    `json:"why"`
	Origin    Origin    `json:"origin"`
	Sent      time.Time `json:"sent"`
	// ReceiveCount is its receives before it reached the DLQ: for a
	// message SQS moved, its source's maxReceiveCount; for one a consumer
	// sent, the count it recorded (mf-receive-count); otherwise SQS's count
	// less the receive that read it. DLQReceives are the looks since.
	ReceiveCount int               `json:"receive_count"`
	DLQReceives  int               `json:"dlq_receives"`
	Version      string            `json:"version,omitempty"`
	Reason       string            `json:"mf_failure_reason,omitempty"`
	Entities     map[string]string `json:"entities,omitempty"` // sku, cliente_id: "A,B"
	Source       string            `json:"source_arn,omitempty"`
}

// Window is the SentTimestamp distribution of messages: Span90 holds 90%.
type Window struct {
	First  time.Time     `json:"first"`
	Last   time.Time     `json:"last"`
	Span90 time.Duration `json:"span90_ns"`
	Shape  string        `json:"shape"`
}

// Count is a value and how many messages have it.
type Count struct {
	Value string `json:"value"`
	N     int    `json:"n"`
}

// Group is the messages of one class, with the evidence and the next step.
type Group struct {
	Class         Verdict  `json:"class"`
	N             int      `json:"n"`
	Window        Window   `json:"window"`
	ReceiveCounts []Count  `json:"receive_counts"`
	Versions      []Count  `json:"versions,omitempty"`
	Reasons       []Count  `json:"consumer_reasons,omitempty"`
	Findings      []Count  `json:"findings"`
	Entities      []Count  `json:"entities,omitempty"`
	Origins       []Count  `json:"origins"`
	Evidence      []string `json:"evidence"`
	Next          string   `json:"next"`
}

// Report is the classification of a DLQ's messages.
type Report struct {
	Verdict  Verdict   `json:"verdict"`
	Total    int       `json:"total"`
	Window   Window    `json:"window"`
	Evidence []string  `json:"evidence"`
	Groups   []Group   `json:"groups"`
	Messages []Message `json:"messages"`
}

// Classify classifies msgs (received with all attributes, or read from a
// saved receive-message document).
func Classify(msgs []types.Message, opts Options) Report {
	if len(opts.SupportedVersions) == 0 {
		opts.SupportedVersions = []int{1}
	}
	opts.VersionKey, opts.Now = cmp.Or(opts.VersionKey, "version"), cmp.Or(opts.Now, time.Now())
	r := Report{Total: len(msgs), Verdict: Empty}
	if len(msgs) == 0 {
		r.Evidence = []string{"no messages"}
		return r
	}
	var ignoredAttrs int
	all := make([]Message, 0, len(msgs))
	var pending []int // no verdict yet: exhausted receives
	for _, m := range msgs {
		c := inspectBody(aws.ToString(m.Body), &opts)
		dl, hasVerdict := sqsbatch.ParseDeadLetter(m.MessageAttributes)
		cm := Message{MessageID: aws.ToString(m.MessageId), PedidoID: c.pedidoID, Sent: stamp(m, types.MessageSystemAttributeNameSentTimestamp),
			Version: c.version, Entities: c.entities, Source: m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)], Origin: origin(m, hasVerdict)}
		cm.ReceiveCount = max(0, receives(m)-1)
		if n := opts.SourceMaxReceives[cm.Source]; cm.Source != "" && n > 0 && n < receives(m) {
			cm.ReceiveCount = n
		} else if cm.Source == "" && hasVerdict && dl.ReceiveCount > 0 {
			cm.ReceiveCount = dl.ReceiveCount
		}
		cm.DLQReceives = max(0, receives(m)-cm.ReceiveCount)
		if cm.Origin == OriginRedrive && hasVerdict {
			ignoredAttrs, hasVerdict = ignoredAttrs+1, false
		} else if hasVerdict {
			cm.Reason = dl.Reason
		}
		expiredWhy, expired := opts.expired(m)
		switch {
		case c.problem != "":
			cm.Class, cm.Why = Poison, c.problem
		case expired:
			cm.Class, cm.Why = Expired, expiredWhy
		case hasVerdict && dl.Class == failure.KindPermanent.String():
			cm.Class, cm.Why = Data, "consumer refused it as permanent: "+short(dl.Reason)
		case hasVerdict && dl.Class == failure.KindPoison.String():
			cm.Class, cm.Why = Poison, "consumer refused its content (not visible in the envelope): "+short(dl.Reason)
		default:
			pending = append(pending, len(all))
		}
		all = append(all, cm)
	}
	// Messages that exhausted their receives: an entity behind many of
	// them is data, the rest transient.
	dataWhy := concentrations(all, pending)
	for _, i := range pending {
		if why, ok := dataWhy[i]; ok {
			all[i].Class, all[i].Why = Data, why
		} else {
			all[i].Class, all[i].Why = Transient, "every receive failed without a verdict from the consumer (timeouts, a dependency down, a crash)"
		}
	}
	r.Messages, r.Window = all, window(all)
	byClass := map[Verdict][]Message{}
	for _, m := range all {
		byClass[m.Class] = append(byClass[m.Class], m)
	}
	var parts []string
	for _, v := range []Verdict{Poison, Expired, Data, Transient} {
		if ms := byClass[v]; len(ms) > 0 {
			r.Groups = append(r.Groups, group(v, ms, len(all), opts))
			parts = append(parts, fmt.Sprintf("%d %s", len(ms), v))
		}
	}
	if r.Verdict = r.Groups[0].Class; len(r.Groups) > 1 {
		r.Verdict = Mixed
		r.Evidence = append(r.Evidence, "more than one cause: "+strings.Join(parts, ", ")+"; handle each group on its own")
	}
	u, rc := uniform(all)
	if r.Window.Shape == "unknown" {
		r.Evidence = append(r.Evidence, "no SentTimestamp on the messages: timing unknown")
	} else if r.Evidence = append(r.Evidence, "window: "+describeWindow(r.Window)); u && len(all) > 1 {
		r.Evidence = append(r.Evidence, "every message had receive count "+rc+" when it reached the DLQ")
	}
	if r.Verdict == Poison && r.Window.Shape == "burst" && u {
		r.Evidence = append(r.Evidence, fmt.Sprintf("timing alone (one burst, every receive count %s) would suggest a transient failure; content outranks timing", rc))
	}
	if ignoredAttrs > 0 {
		r.Evidence = append(r.Evidence, fmt.Sprintf("%d messages moved by SQS's redrive carry mf-failure-* attributes, which only the producer can have set: ignored", ignoredAttrs))
	}
	return r
}

func origin(m types.Message, hasVerdict bool) Origin {
	if m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] != "" {
		return OriginRedrive
	} else if hasVerdict {
		return OriginConsumer
	}
	return OriginUnknown
}

// expired says whether m is older than the consumer's replay window (by
// the consumer's own verdict, or its body's creation time), and why.
func (opts Options) expired(m types.Message) (why string, expired bool) {
	if dl, ok := sqsbatch.ParseDeadLetter(m.MessageAttributes); origin(m, ok) == OriginConsumer && strings.Contains(dl.Reason, lambdaapi.ReasonExpiredWindow) {
		return "the consumer refused it as older than its replay window: " + short(dl.Reason), true
	}
	if opts.Window <= 0 || opts.CreatedAtKey == "" {
		return "", false
	}
	created, err := sqsbatch.CreatedAt([]byte(aws.ToString(m.Body)), opts.CreatedAtKey)
	if age := cmp.Or(opts.Now, time.Now()).Sub(created); err == nil && age > opts.Window {
		return fmt.Sprintf("%s %s is %s old, beyond the consumer's replay window of %s", opts.CreatedAtKey,
			created.UTC().Format("2006-01-02 15:04"), sqsbatch.Days(age.Round(time.Hour)), sqsbatch.Days(opts.Window)), true
	}
	return "", false
}

func group(v Verdict, ms []Message, total int, opts Options) Group {
	g := Group{Class: v, N: len(ms), Window: window(ms)}
	g.ReceiveCounts = tally(ms, func(m Message) []string { return []string{strconv.Itoa(m.ReceiveCount)} })
	g.Versions = tally(ms, func(m Message) []string {
		return slices.DeleteFunc([]string{m.Version}, func(s string) bool { return s == "" })
	})
	g.Reasons = tallyText(ms, func(m Message) string { return m.Reason })
	g.Findings = tallyText(ms, func(m Message) string { return m.Why })
	g.Entities = tally(ms, entities)
	g.Origins = tally(ms, func(m Message) []string { return []string{string(m.Origin)} })
	pct := func(n int) string { return fmt.Sprintf("%d/%d", n, len(ms)) }
	g.Evidence = append(g.Evidence, fmt.Sprintf("%d of %d messages; sent %s", len(ms), total, describeWindow(g.Window)), "why: "+counts(g.Findings, 4))
	if len(g.Reasons) > 0 {
		top := g.Reasons[0]
		g.Evidence = append(g.Evidence, fmt.Sprintf("%s consumer reason (%s): %s", map[bool]string{true: "most common", false: "shared"}[top.N*2 < len(ms)], pct(top.N), top.Value))
	}
	top := g.ReceiveCounts[0]
	g.Evidence = append(g.Evidence, fmt.Sprintf("receive counts %s: %s at %s (before the DLQ: the receives of inspect and classify not counted)",
		map[bool]string{true: "mixed", false: "uniform"}[top.N*10 < len(ms)*9], pct(top.N), top.Value))
	if len(g.Versions) > 0 {
		g.Evidence = append(g.Evidence, fmt.Sprintf("schema versions: %s (consumer accepts %s)", counts(g.Versions, 4), sqsbatch.JoinInts(opts.SupportedVersions)))
	}
	if len(g.Entities) > 0 && g.Entities[0].N >= minConcentrated && g.Entities[0].N*2 >= len(ms) {
		g.Evidence = append(g.Evidence, fmt.Sprintf("one entity behind most: %s in %s", g.Entities[0].Value, pct(g.Entities[0].N)))
	}
	g.Evidence = append(g.Evidence, "reached the DLQ by: "+counts(g.Origins, 3))
	switch v {
	case Poison:
		var schema, malformed, other int
		for _, m := range ms {
			switch {
			case strings.HasPrefix(m.Why, "schema: version"):
				schema++
			case strings.HasPrefix(m.Why, "schema:"), strings.HasPrefix(m.Why, "malformed:"):
				malformed++
			default:
				other++
			}
		}
		var parts []string
		for _, p := range []struct {
			n    int
			text string
		}{
			{schema, "need a consumer that accepts their schema: deploy it first (consumers before producers), then redrive them"},
			{malformed, "are malformed or incomplete and no deploy makes them valid: do not redrive them; record them and fix the producer (they expire with the DLQ's retention)"},
			{other, "were refused by the consumer's own validation: if the validation is wrong, deploy its fix and redrive them; if the data is wrong, fix the producer and do not redrive them (a redrive sends the same bodies)"},
		} {
			if p.n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", p.n, p.text))
			}
		}
		g.Next = strings.Join(parts, "; ")
	case Expired:
		g.Next = "older than the consumer's replay window: its records may be gone, so a duplicate would run again, and the consumer refuses them (mf-dlq redrive leaves them in the DLQ). " +
			"For each, check that its side effect did not happen (docs/runbooks/dlq.md#expired-messages); re-admit only those with redrive --readmit-expired, record the rest (they expire with the DLQ's retention)"
	case Data:
		g.Next = "fix the data (or the consumer's handling of it) first, then redrive these messages"
	case Transient:
		g.Next = "confirm the dependency is healthy again (logs by message id, dependency metrics), then redrive at a rate it can take"
	}
	return g
}

// window computes the SentTimestamp distribution.
func window(ms []Message) Window {
	var ts []time.Time
	for _, m := range ms {
		if !m.Sent.IsZero() {
			ts = append(ts, m.Sent)
		}
	}
	if len(ts) == 0 {
		return Window{Shape: "unknown"}
	}
	slices.SortFunc(ts, time.Time.Compare)
	w := Window{First: ts[0], Last: ts[len(ts)-1], Shape: "single"}
	if len(ts) == 1 {
		return w
	}
	k := (len(ts)*9 + 9) / 10 // ceil(90%)
	w.Span90 = ts[len(ts)-1].Sub(ts[0])
	for i := 0; i+k-1 < len(ts); i++ {
		w.Span90 = min(w.Span90, ts[i+k-1].Sub(ts[i]))
	}
	w.Shape = map[bool]string{true: "burst", false: "drip"}[w.Span90 <= burstWindow]
	return w
}

func describeWindow(w Window) string {
	if w.Shape == "single" || w.Shape == "unknown" {
		return w.Shape + " " + w.First.UTC().Format("2006-01-02 15:04")
	}
	return fmt.Sprintf("%s → %s (%s; 90%% within %s)", w.First.UTC().Format("2006-01-02 15:04"), w.Last.UTC().Format("2006-01-02 15:04"), w.Shape, human(w.Span90))
}

func human(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
	return d.Round(time.Second).String()
}

// uniform reports whether every message had one receive count, and which.
func uniform(ms []Message) (bool, string) {
	for _, m := range ms {
		if m.ReceiveCount != ms[0].ReceiveCount {
			return false, ""
		}
	}
	return len(ms) > 0, strconv.Itoa(ms[0].ReceiveCount)
}

// concentrations says why the messages of idx that an entity (SKU,
// customer) explains are data: behind minConcentrated or more and most of
// them, or behind a drip three times as often as the next. Entities are
// taken greedily, most frequent first, so several bad SKUs are all found.
func concentrations(all []Message, idx []int) map[int]string {
	out := map[int]string{}
	for left := idx; len(left) >= minConcentrated; {
		var msgs []Message
		for _, i := range left {
			msgs = append(msgs, all[i])
		}
		ranked := tally(msgs, entities)
		if len(ranked) == 0 {
			break
		}
		top, next := ranked[0], Count{}
		if len(ranked) > 1 {
			next = ranked[1]
		}
		var mine []Message
		var mineIdx, rest []int
		for _, i := range left {
			if slices.Contains(entities(all[i]), top.Value) {
				mine, mineIdx = append(mine, all[i]), append(mineIdx, i)
			} else {
				rest = append(rest, i)
			}
		}
		dominant := float64(top.N) >= concentrationShare*float64(len(idx))
		drip := window(mine).Shape == "drip" && top.N >= 3*next.N
		if top.N < minConcentrated || !dominant && !drip {
			break
		}
		k, v, _ := strings.Cut(top.Value, "=")
		why := fmt.Sprintf("every receive failed, and %s %s is behind %d of the %d messages without a consumer verdict", k, v, top.N, len(idx))
		if drip && !dominant {
			why += fmt.Sprintf(" (a drip over %s)", human(window(mine).Span90))
		}
		for _, i := range mineIdx {
			out[i] = why
		}
		left = rest
	}
	return out
}

// entities are m's entities as "key=value".
func entities(m Message) (out []string) {
	for k, vals := range m.Entities {
		for _, val := range strings.Split(vals, ",") {
			out = append(out, k+"="+val)
		}
	}
	return out
}

func tally(ms []Message, f func(Message) []string) []Count {
	m := map[string]int{}
	for _, msg := range ms {
		for _, v := range f(msg) {
			m[v]++
		}
	}
	out := make([]Count, 0, len(m))
	for v, n := range m {
		out = append(out, Count{v, n})
	}
	sort.Slice(out, func(i, j int) bool {
		return cmp.Or(cmp.Compare(out[j].N, out[i].N), strings.Compare(out[i].Value, out[j].Value)) < 0
	})
	return out
}

func counts(c []Count, max int) string {
	var parts []string
	for i, x := range c {
		if i == max {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(c)-max))
			break
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", x.Value, x.N))
	}
	return strings.Join(parts, ", ")
}

// tallyText counts texts that differ only in ids as one ("#" for the ids
// unless all its messages agree).
func tallyText(ms []Message, get func(Message) string) []Count {
	originals := map[string]map[string]bool{}
	c := tally(ms, func(m Message) []string {
		text := get(m)
		if text == "" {
			return nil
		}
		key := normaliseReason(text)
		if originals[key] == nil {
			originals[key] = map[string]bool{}
		}
		originals[key][short(text)] = true
		return []string{key}
	})
	for i := range c {
		if o := originals[c[i].Value]; len(o) == 1 {
			for text := range o {
				c[i].Value = text
			}
		}
	}
	return c
}

// ids are the parts of a reason that differ between messages of one cause:
// runs of 3+ digits (order ids, SKUs) and any byte offset.
var ids = regexp.MustCompile(`[0-9]{3,}|\bbyte [0-9]+`)

// normaliseReason makes reasons that differ only in ids comparable.
func normaliseReason(s string) string {
	return short(ids.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "byte ") {
			return "byte #"
		}
		return "#"
	}))
}

func short(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:197]) + "..."
	}
	return s
}

// stamp is a timestamp system attribute of m, zero when absent.
func stamp(m types.Message, name types.MessageSystemAttributeName) time.Time {
	n, err := strconv.ParseInt(m.Attributes[string(name)], 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

func receives(m types.Message) int {
	n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	return n
}

// content is what a body says about itself.
type content struct {
	pedidoID string // the order's id, "" when the body names none
	problem  string // "" when the body passes every check
	version  string // the version found ("" when absent or not checked)
	entities map[string]string
}

// entityKeys are the body keys whose concentration points at data.
var entityKeys = []string{"sku", "cliente_id"}

// inspectBody applies the consumer's envelope rules, then its content
// check, in words that group alike messages, and finds the entities.
func inspectBody(body string, opts *Options) content {
	c := content{entities: map[string]string{}, pedidoID: pedidoID(body)}
	rules := sqsbatch.EnvelopeRules{SupportedVersions: opts.SupportedVersions, VersionKey: opts.VersionKey,
		DisableVersionCheck: opts.VersionKey == "-", RequiredKeys: opts.RequiredKeys}
	_, err := sqsbatch.CheckEnvelope(body, rules)
	var env *sqsbatch.EnvelopeError
	if errors.As(err, &env) && env.Problem.Malformed() {
		c.problem = malformed(env)
		return c
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal([]byte(body), &obj) // CheckEnvelope parsed it: an object
	findEntities(obj, c.entities, 0)
	if !rules.DisableVersionCheck {
		if raw, ok := dig(obj, opts.VersionKey); ok {
			c.version = string(raw)
			if s, err := strconv.Unquote(c.version); err == nil {
				c.version = s
			}
		}
	}
	if env == nil {
		if opts.Window > 0 && opts.CreatedAtKey != "" {
			// The consumer cannot apply its replay window to it: poison
			// (sqsbatch.Window.Check).
			if _, err := sqsbatch.CreatedAt([]byte(body), opts.CreatedAtKey); err != nil {
				c.problem = "schema: " + err.Error()
				return c
			}
		}
		if opts.Content != nil {
			if err := opts.Content(body); err != nil {
				c.problem = "the consumer's validation refuses it: " + err.Error()
			}
		}
		return c
	}
	switch env.Problem {
	case sqsbatch.NoVersion:
		c.problem = fmt.Sprintf("schema: no %q key", env.Key)
	case sqsbatch.BadVersion:
		c.problem = fmt.Sprintf("schema: %q: %s", env.Key, env.Err)
	case sqsbatch.UnsupportedVersion:
		c.problem = fmt.Sprintf("schema: version %s, the consumer accepts %s", c.version, sqsbatch.JoinInts(env.Supported))
	case sqsbatch.MissingKeys:
		c.problem = "schema: missing " + strings.Join(env.Missing, ", ")
	default:
		c.problem = "schema: " + env.Error()
	}
	return c
}

// malformed says why a body is not a JSON object of the event.
func malformed(env *sqsbatch.EnvelopeError) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case env.Problem == sqsbatch.EmptyBody:
		return "malformed: empty body"
	case env.Problem == sqsbatch.NullBody:
		return "malformed: body is JSON null"
	case env.Problem == sqsbatch.SNSEnvelope:
		return "malformed: an SNS notification envelope (raw message delivery is off)"
	case errors.As(env.Err, &syn):
		return fmt.Sprintf("malformed: not JSON (syntax error at byte %d)", syn.Offset)
	case errors.As(env.Err, &typ):
		return "malformed: body is a JSON " + typ.Value + ", not an object"
	}
	return "malformed: " + fmt.Sprint(env.Err)
}

// pedidoRE is the shape of an order id, found in bodies that are not JSON.
var pedidoRE = regexp.MustCompile(`PED-[0-9]{4}-[0-9]+`)

// pedidoID is the body's pedido_id (top level or in an EventBridge
// event's detail), or an order id anywhere in a body that is not a JSON
// object.
func pedidoID(body string) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &obj) == nil && obj != nil {
		for _, k := range []string{"pedido_id", "detail.pedido_id"} {
			if raw, ok := dig(obj, k); ok {
				if s := scalar(raw); s != "" {
					return s
				}
			}
		}
	}
	return pedidoRE.FindString(body)
}

// dig follows a dotted path (sqsbatch.Lookup); absent, null, "" and a
// path through a non-object count as missing.
func dig(obj map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	raw, ok, err := sqsbatch.Lookup(obj, path)
	return bytes.TrimSpace(raw), ok && err == nil
}

// findEntities collects entity keys at the top level, in "detail" and in
// arrays of objects ("lineas"), up to a small depth. Several values of one
// key are joined in sorted order ("A,B").
func findEntities(obj map[string]json.RawMessage, out map[string]string, depth int) {
	for k, raw := range obj {
		if vals := strings.FieldsFunc(out[k], func(r rune) bool { return r == ',' }); slices.Contains(entityKeys, k) {
			if v := scalar(raw); v != "" && !slices.Contains(vals, v) {
				out[k] = strings.Join(slices.Sorted(slices.Values(append(vals, v))), ",")
			}
			continue
		}
		var sub map[string]json.RawMessage
		var arr []json.RawMessage
		if depth >= 3 {
			continue
		} else if json.Unmarshal(raw, &sub) == nil && sub != nil {
			findEntities(sub, out, depth+1)
		} else if json.Unmarshal(raw, &arr) == nil {
			for _, el := range arr {
				var sub map[string]json.RawMessage
				if json.Unmarshal(el, &sub) == nil && sub != nil {
					findEntities(sub, out, depth+1)
				}
			}
		}
	}
}

func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	t := strings.TrimSpace(string(raw))
	if t == "null" || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return ""
	}
	return t
}
