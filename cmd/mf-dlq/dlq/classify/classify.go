// Package classify answers the DLQ runbook's step 2: are the messages in a
// dead-letter queue poison, transient failures, or bad data, or a mixture?
// The rules, in order of authority: content (not a JSON object, an SNS
// envelope, an unsupported major version, a missing required key: poison,
// whatever its timing); age (older than the consumer's replay window, or
// refused for it: expired); the consumer's own verdict (mf-failure-class,
// believed only on messages a consumer sent to the DLQ); and, for messages
// without a verdict, concentration on one SKU or customer (data) or not
// (transient). Timing and receive counts are evidence, never proof. The
// overall verdict is the one class present, or mixed. Reasoning and the
// thresholds: docs/design.md#dlq-classify and docs/design.md#dlq-tool.
package classify

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/replaywindow"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// Verdict is a classification.
type Verdict string

// Verdicts. Empty is reported for no messages.
const (
	Poison    Verdict = "poison"
	Transient Verdict = "transient"
	Data      Verdict = "data"
	Mixed     Verdict = "mixed"
	Empty     Verdict = "empty"
	// Expired: older than the consumer's replay window; a redrive would be
	// refused (and mf-dlq redrive leaves them unless re-admitted).
	Expired Verdict = "expired"
)

// Options are the consumer's expectations.
type Options struct {
	// AcceptedVersions are the major versions the consumer accepts. Default {1}.
	AcceptedVersions []int
	// VersionKey is the dotted path of the version; "-" disables the check.
	// Default "version".
	VersionKey string
	// RequiredKeys are dotted paths that must be present.
	RequiredKeys []string
	// Window is the consumer's replay window and CreatedAtKey the dotted
	// path of the event's creation time in the body (config/catalog);
	// a message older than Window is expired. Zero: no window (only the
	// consumer's own expired verdict counts).
	Window       time.Duration
	CreatedAtKey string
	// Content is the consumer's own check of a body that passes the
	// envelope (decoding into its message type and that type's Validate):
	// a body it refuses is poison, as the consumer would call it. Nil: only
	// the envelope rules are checked.
	Content func(body string) error
	// Now is the time ages are measured at; default the wall clock.
	Now time.Time
	// SourceMaxReceives maps a source queue's ARN to its maxReceiveCount:
	// the receives a message SQS moved from it had when it was moved, the
	// count reported for it however often the DLQ was looked at since.
	// Without an entry, the count is SQS's less the receive that read it.
	SourceMaxReceives map[string]int
}

func (o Options) withDefaults() Options {
	if len(o.AcceptedVersions) == 0 {
		o.AcceptedVersions = []int{1}
	}
	o.VersionKey = cmp.Or(o.VersionKey, "version")
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	return o
}

// Expiry says whether m is older than the consumer's replay window, and
// why: the consumer dead-lettered it as expired-idempotency-window (a
// verdict believed only on a message the consumer itself sent to the DLQ),
// or its event's creation time is older than opts.Window.
func Expiry(m types.Message, opts Options) (why string, expired bool) {
	opts = opts.withDefaults()
	if m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] == "" {
		if dl, ok := sqsbatch.ParseDeadLetter(m.MessageAttributes); ok && strings.Contains(dl.Reason, lambdaapi.ReasonExpiredWindow) {
			return "the consumer refused it as older than its replay window: " + short(dl.Reason), true
		}
	}
	if opts.Window <= 0 || opts.CreatedAtKey == "" {
		return "", false
	}
	created, err := replaywindow.CreatedAt([]byte(aws.ToString(m.Body)), opts.CreatedAtKey)
	if err != nil {
		return "", false
	}
	if age := opts.Now.Sub(created); age > opts.Window {
		return fmt.Sprintf("%s %s is %s old, beyond the consumer's replay window of %s", opts.CreatedAtKey,
			created.UTC().Format("2006-01-02 15:04"), replaywindow.Days(age.Round(time.Hour)), replaywindow.Days(opts.Window)), true
	}
	return "", false
}

// burstWindow is the longest span holding 90% of the messages that is still
// called a burst: an outage or a deploy night, not days.
const burstWindow = 6 * time.Hour

// concentrationShare is the share of the no-verdict messages one entity
// (SKU, customer) must reach to call them data.
const concentrationShare = 0.5

// minConcentrated is the fewest messages one entity must be behind before
// a concentration counts (two orders sharing a SKU prove nothing).
const minConcentrated = 3

// Origin says how a message reached the DLQ.
type Origin string

// Origins.
const (
	// OriginRedrive: SQS moved it after maxReceiveCount receives
	// (DeadLetterQueueSourceArn is set).
	OriginRedrive Origin = "redrive"
	// OriginConsumer: a consumer sent it with its verdict (mf-* attributes).
	OriginConsumer Origin = "consumer"
	// OriginUnknown: sent to the DLQ by something else (an SNS subscription,
	// a tool, a person).
	OriginUnknown Origin = "unknown"
)

// Message is one classified message.
type Message struct {
	MessageID string `json:"message_id"`
	// PedidoID is the order's id (the key of the log search and of the
	// idempotency records), "" when the body names none.
	PedidoID string    `json:"pedido_id,omitempty"`
	Class    Verdict   `json:"class"`
	Why      string    `json:"why"`
	Origin   Origin    `json:"origin"`
	Sent     time.Time `json:"sent"`
	// ReceiveCount is the receives the message had before it reached the
	// DLQ, as it was before any tool looked: for a message SQS moved, its
	// source's maxReceiveCount (Options.SourceMaxReceives); for one a
	// consumer sent, the count the consumer recorded (mf-receive-count);
	// otherwise SQS's count less the receive that read it.
	ReceiveCount int `json:"receive_count"`
	// DLQReceives is SQS's ApproximateReceiveCount less ReceiveCount: the
	// looks (inspect, classify, this one included) since it reached the
	// DLQ.
	DLQReceives int               `json:"dlq_receives"`
	Version     string            `json:"version,omitempty"`
	Reason      string            `json:"mf_failure_reason,omitempty"`
	Entities    map[string]string `json:"entities,omitempty"`
	Source      string            `json:"source_arn,omitempty"`
}

// Window is the SentTimestamp distribution of a set of messages.
type Window struct {
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Span90 is the shortest interval holding 90% of the messages.
	Span90 time.Duration `json:"span90_ns"`
	// Shape is "burst", "drip" or "single".
	Shape string `json:"shape"`
}

// Count is a value and how many messages have it.
type Count struct {
	Value string `json:"value"`
	N     int    `json:"n"`
}

// Group summarises the messages of one class.
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
	Consumers     []Count  `json:"consumer_versions,omitempty"`
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
	opts = opts.withDefaults()
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
		cm := Message{
			MessageID: aws.ToString(m.MessageId), PedidoID: c.pedidoID, Sent: Stamp(m, types.MessageSystemAttributeNameSentTimestamp),
			Version: c.version, Entities: c.entities,
			Source: m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)],
		}
		dl, hasVerdict := sqsbatch.ParseDeadLetter(m.MessageAttributes)
		cm.ReceiveCount = receivesBefore(m, dl, hasVerdict, opts)
		cm.DLQReceives = max(0, Receives(m)-cm.ReceiveCount)
		switch {
		case cm.Source != "":
			cm.Origin = OriginRedrive
			if hasVerdict {
				ignoredAttrs++
				hasVerdict = false
			}
		case hasVerdict:
			cm.Origin, cm.Reason = OriginConsumer, dl.Reason
		default:
			cm.Origin = OriginUnknown
		}
		expiredWhy, expired := Expiry(m, opts)
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
		m := &all[i]
		if why, ok := dataWhy[i]; ok {
			m.Class, m.Why = Data, why
		} else {
			m.Class, m.Why = Transient, "every receive failed without a verdict from the consumer (timeouts, a dependency down, a crash)"
		}
	}
	r.Messages = all
	r.Window = window(all)
	byClass := map[Verdict][]Message{}
	for _, m := range all {
		byClass[m.Class] = append(byClass[m.Class], m)
	}
	for _, v := range []Verdict{Poison, Expired, Data, Transient} {
		if ms := byClass[v]; len(ms) > 0 {
			r.Groups = append(r.Groups, group(v, ms, len(all), opts))
		}
	}
	if len(r.Groups) == 1 {
		r.Verdict = r.Groups[0].Class
	} else {
		r.Verdict = Mixed
		parts := make([]string, 0, len(r.Groups))
		for _, g := range r.Groups {
			parts = append(parts, fmt.Sprintf("%d %s", g.N, g.Class))
		}
		r.Evidence = append(r.Evidence, "more than one cause: "+strings.Join(parts, ", ")+"; handle each group on its own")
	}
	r.Evidence = append(r.Evidence, timingEvidence(r.Window, all)...)
	if r.Verdict == Poison && r.Window.Shape == "burst" && byClass[Poison] != nil {
		if u, v := uniform(all); u {
			r.Evidence = append(r.Evidence, fmt.Sprintf("timing alone (one burst, every receive count %s) would suggest a transient failure; content outranks timing", v))
		}
	}
	if ignoredAttrs > 0 {
		r.Evidence = append(r.Evidence, fmt.Sprintf("%d messages moved by SQS's redrive carry mf-failure-* attributes, which only the producer can have set: ignored", ignoredAttrs))
	}
	return r
}

// receivesBefore is a message's receive count before it reached the DLQ
// (see Message.ReceiveCount).
func receivesBefore(m types.Message, dl sqsbatch.DeadLetter, hasVerdict bool, opts Options) int {
	total := Receives(m)
	if src := m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; src != "" {
		if n := opts.SourceMaxReceives[src]; n > 0 && n < total {
			return n
		}
	} else if hasVerdict && dl.ReceiveCount > 0 {
		return dl.ReceiveCount
	}
	return max(0, total-1)
}

func group(v Verdict, ms []Message, total int, opts Options) Group {
	g := Group{Class: v, N: len(ms), Window: window(ms)}
	g.ReceiveCounts = tally(ms, func(m Message) []string { return []string{strconv.Itoa(m.ReceiveCount)} })
	g.Versions = tally(ms, func(m Message) []string {
		if m.Version == "" {
			return nil
		}
		return []string{m.Version}
	})
	g.Reasons = tallyText(ms, func(m Message) string { return m.Reason })
	g.Findings = tallyText(ms, func(m Message) string { return m.Why })
	g.Entities = tally(ms, func(m Message) []string {
		var out []string
		for k, vals := range m.Entities {
			for _, val := range strings.Split(vals, ",") {
				out = append(out, k+"="+val)
			}
		}
		return out
	})
	g.Origins = tally(ms, func(m Message) []string { return []string{string(m.Origin)} })
	pct := func(n int) string { return fmt.Sprintf("%d/%d", n, len(ms)) }
	g.Evidence = append(g.Evidence, fmt.Sprintf("%d of %d messages; sent %s", len(ms), total, describeWindow(g.Window)))
	g.Evidence = append(g.Evidence, "why: "+counts(g.Findings, 4))
	if top := first(g.Reasons); top.N > 0 {
		shared := "shared"
		if top.N*2 < len(ms) {
			shared = "most common"
		}
		g.Evidence = append(g.Evidence, fmt.Sprintf("%s consumer reason (%s): %s", shared, pct(top.N), top.Value))
	}
	if top := first(g.ReceiveCounts); top.N > 0 {
		share := "uniform"
		if top.N*10 < len(ms)*9 {
			share = "mixed"
		}
		g.Evidence = append(g.Evidence, fmt.Sprintf("receive counts %s: %s at %s (before the DLQ: the receives of inspect and classify not counted)", share, pct(top.N), top.Value))
	}
	if len(g.Versions) > 0 {
		g.Evidence = append(g.Evidence, fmt.Sprintf("schema versions: %s (consumer accepts %s)", counts(g.Versions, 4), sqsbatch.JoinInts(opts.AcceptedVersions)))
	}
	if top := first(g.Entities); top.N >= minConcentrated && top.N*2 >= len(ms) {
		g.Evidence = append(g.Evidence, fmt.Sprintf("one entity behind most: %s in %s", top.Value, pct(top.N)))
	}
	g.Evidence = append(g.Evidence, "reached the DLQ by: "+counts(g.Origins, 3))
	switch v {
	case Poison:
		g.Next = poisonNext(ms)
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

// poisonNext says what fixes the poison messages of a group.
func poisonNext(ms []Message) string {
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
	if schema > 0 {
		parts = append(parts, fmt.Sprintf("%d need a consumer that accepts their schema: deploy it first (consumers before producers), then redrive them", schema))
	}
	if malformed > 0 {
		parts = append(parts, fmt.Sprintf("%d are malformed or incomplete and no deploy makes them valid: do not redrive them; record them and fix the producer (they expire with the DLQ's retention)", malformed))
	}
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d were refused by the consumer's own validation: if the validation is wrong, deploy its fix and redrive them; if the data is wrong, fix the producer and do not redrive them (a redrive sends the same bodies)", other))
	}
	return strings.Join(parts, "; ")
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
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	w := Window{First: ts[0], Last: ts[len(ts)-1]}
	if len(ts) == 1 {
		w.Shape = "single"
		return w
	}
	k := (len(ts)*9 + 9) / 10 // ceil(90%)
	w.Span90 = ts[len(ts)-1].Sub(ts[0])
	for i := 0; i+k-1 < len(ts); i++ {
		w.Span90 = min(w.Span90, ts[i+k-1].Sub(ts[i]))
	}
	w.Shape = "drip"
	if w.Span90 <= burstWindow {
		w.Shape = "burst"
	}
	return w
}

func timingEvidence(w Window, ms []Message) []string {
	if w.Shape == "unknown" {
		return []string{"no SentTimestamp on the messages: timing unknown"}
	}
	out := []string{"window: " + describeWindow(w)}
	if u, v := uniform(ms); u && len(ms) > 1 {
		out = append(out, "every message had receive count "+v+" when it reached the DLQ")
	}
	return out
}

func describeWindow(w Window) string {
	switch w.Shape {
	case "single", "unknown":
		return w.Shape + " " + w.First.UTC().Format("2006-01-02 15:04")
	}
	return fmt.Sprintf("%s → %s (%s; 90%% within %s)", w.First.UTC().Format("2006-01-02 15:04"), w.Last.UTC().Format("2006-01-02 15:04"),
		w.Shape, human(w.Span90))
}

func human(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	default:
		return d.Round(time.Second).String()
	}
}

func uniform(ms []Message) (bool, string) {
	if len(ms) == 0 {
		return false, ""
	}
	c := ms[0].ReceiveCount
	for _, m := range ms {
		if m.ReceiveCount != c {
			return false, ""
		}
	}
	return true, strconv.Itoa(c)
}

// concentrations finds the entities (SKU, customer) behind the messages
// of idx and returns, for the messages they explain, why they are data. An
// entity counts when it is behind at least minConcentrated messages and
// either behind most of them (concentrationShare), or behind a drip (its
// messages spread beyond burstWindow) at least three times as often as the
// next entity. A popular product inside a burst is neither. Entities are
// taken greedily, most frequent first, so several bad SKUs are all found.
func concentrations(all []Message, idx []int) map[int]string {
	out := map[int]string{}
	left := slices.Clone(idx)
	for len(left) >= minConcentrated {
		type kv struct{ k, v string }
		counts := map[kv]int{}
		for _, i := range left {
			for k, vals := range all[i].Entities {
				for _, v := range strings.Split(vals, ",") {
					counts[kv{k, v}]++
				}
			}
		}
		ranked := slices.Collect(maps.Keys(counts))
		sort.Slice(ranked, func(i, j int) bool {
			a, b := ranked[i], ranked[j]
			return counts[a] > counts[b] || counts[a] == counts[b] && a.k+"="+a.v < b.k+"="+b.v
		})
		if len(ranked) == 0 {
			break
		}
		top, n := ranked[0], counts[ranked[0]]
		next := 0
		if len(ranked) > 1 {
			next = counts[ranked[1]]
		}
		var mine []Message
		var rest []int
		for _, i := range left {
			if hasEntity(all[i].Entities, top.k, top.v) {
				mine = append(mine, all[i])
			} else {
				rest = append(rest, i)
			}
		}
		dominant := float64(n) >= concentrationShare*float64(len(idx))
		drip := window(mine).Shape == "drip" && n >= 3*next
		if n < minConcentrated || !dominant && !drip {
			break
		}
		why := fmt.Sprintf("every receive failed, and %s %s is behind %d of the %d messages without a consumer verdict", top.k, top.v, n, len(idx))
		if drip && !dominant {
			why += fmt.Sprintf(" (a drip over %s)", human(window(mine).Span90))
		}
		for _, i := range left {
			if hasEntity(all[i].Entities, top.k, top.v) {
				out[i] = why
			}
		}
		left = rest
	}
	return out
}

func hasEntity(e map[string]string, k, v string) bool {
	return slices.Contains(strings.Split(e[k], ","), v)
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

func first(c []Count) Count {
	if len(c) == 0 {
		return Count{}
	}
	return c[0]
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

// tallyText counts texts that differ only in ids (runs of 3+ digits) as
// one, shown verbatim when all its messages agree and with "#" for the ids
// otherwise.
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

// Stamp returns a timestamp system attribute of m (SentTimestamp,
// ApproximateFirstReceiveTimestamp: epoch milliseconds) in UTC, or the
// zero time when absent or not a positive number.
func Stamp(m types.Message, name types.MessageSystemAttributeName) time.Time {
	n, err := strconv.ParseInt(m.Attributes[string(name)], 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}

// Receives returns m's ApproximateReceiveCount, 0 when absent.
func Receives(m types.Message) int {
	n, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	return n
}
