package dlq

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/classify"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// DefaultInspectCount is how many messages inspect looks at (runbook: ~10).
const DefaultInspectCount = 10

// InspectOptions configures Inspect.
type InspectOptions struct {
	// Max is the number of messages to look at; 0 means DefaultInspectCount.
	Max int
	// Save, when set, receives the raw messages as JSON lines (the shape of
	// aws sqs receive-message --attribute-names All --message-attribute-names All).
	Save io.Writer
}

// Inspect prints a table of up to opts.Max messages of the DLQ without
// deleting any (see peek) and returns them.
func (t *Tool) Inspect(ctx context.Context, target *Target, opts InspectOptions) ([]types.Message, error) {
	if opts.Max <= 0 {
		opts.Max = DefaultInspectCount
	}
	msgs, err := t.peek(ctx, target.DLQ, opts.Max)
	if err != nil {
		return msgs, err
	}
	if len(msgs) == 0 {
		return nil, t.emptyError(ctx, target.DLQ)
	}
	if opts.Save != nil {
		if err := WriteMessages(opts.Save, msgs); err != nil {
			return msgs, fmt.Errorf("save messages: %w", err)
		}
	}
	fmt.Fprintf(t.out(), "%d messages of %s (received with VisibilityTimeout=%s, not deleted, made visible again):\n\n", len(msgs), target.DLQ.Name, PeekVisibility)
	PrintTable(t.out(), msgs)
	return msgs, nil
}

// emptyError explains an empty DLQ, mentioning in-flight messages (someone
// else receiving) and delayed ones.
func (t *Tool) emptyError(ctx context.Context, q QueueRef) error {
	attrs, err := t.queueAttributes(ctx, q.URL, types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed)
	if err != nil {
		return fmt.Errorf("%w: %s returned no message", ErrEmpty, q.Name)
	}
	inflight := attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]
	msg := fmt.Sprintf("%s returned no message (ApproximateNumberOfMessages %s)", q.Name, attrs[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	if inflight != "" && inflight != "0" {
		msg += fmt.Sprintf("; %s are in flight: someone else is receiving them (another inspection, a redrive in progress?); they come back when their visibility timeout ends", inflight)
	}
	return fmt.Errorf("%w: %s", ErrEmpty, msg)
}

// PrintTable prints one line per message: sent and first-receive times,
// receive count, size, schema version, message group, how it got here,
// the consumer's failure class and reason, and the consumer version.
func PrintTable(w io.Writer, msgs []types.Message) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE ID\tSENT (UTC)\tFIRST RECEIVE\tRECV\tSIZE\tVER\tGROUP\tORIGIN\tFAILURE\tCONSUMER")
	for _, m := range msgs {
		r, ok := rowOf(m)
		failure, consumer := "-", "-"
		if ok {
			failure = r.FailureClass + ": " + r.FailureReason
			consumer = r.ConsumerVersion
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n",
			r.MessageID, r.Sent, r.FirstReceive, r.ReceiveCount, r.Size, r.Version, orDash(r.Group), r.Origin, clip(failure, 60), consumer)
	}
	tw.Flush()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04:05")
}

// bodyVersion returns the body's "version" as text, "?" for a body that is
// not a JSON object, "-" when absent.
func bodyVersion(body string) string {
	var env map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &env) != nil || env == nil {
		return "?"
	}
	v, ok := env["version"]
	if !ok {
		return "-"
	}
	return strings.Trim(string(v), `"`)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ClassifyOptions configures Classify.
type ClassifyOptions struct {
	classify.Options
	// Max is the most messages received from a live DLQ; 0 means 1000.
	Max int
}

// Classify receives the DLQ's messages (without deleting, see peek) and
// classifies them.
func (t *Tool) Classify(ctx context.Context, target *Target, opts ClassifyOptions) (classify.Report, error) {
	if opts.Max <= 0 {
		opts.Max = 1000
	}
	msgs, err := t.peek(ctx, target.DLQ, opts.Max)
	if err != nil {
		return classify.Report{}, err
	}
	if len(msgs) == 0 {
		return classify.Report{}, t.emptyError(ctx, target.DLQ)
	}
	if len(msgs) == opts.Max {
		fmt.Fprintf(t.log(), "note: classified the first %d messages (--max)\n", opts.Max)
	}
	if opts.Now.IsZero() {
		opts.Now = t.Clock.Now()
	}
	return classify.Classify(msgs, opts.Options), nil
}

// ConsumerOptions returns the classification options of the target's
// consumer from config/catalog (accepted versions, required keys,
// replay window), its content check and the maxReceiveCount of its
// sources, or the defaults.
func ConsumerOptions(target *Target) classify.Options {
	var o classify.Options
	if target != nil && target.Catalog != nil && len(target.Catalog.Consumers) > 0 {
		o = OptionsOf(target.Catalog.Consumers[0])
	}
	if target != nil {
		for _, src := range target.Sources {
			if n := src.MaxReceiveCount(); n > 0 && src.ARN != "" {
				if o.SourceMaxReceives == nil {
					o.SourceMaxReceives = map[string]int{}
				}
				o.SourceMaxReceives[src.ARN] = n
			}
		}
	}
	return o
}

// OptionsOf returns what classify checks a body against for consumer c:
// the versions it accepts, its required keys, its replay window and its
// content check.
func OptionsOf(c catalog.Consumer) classify.Options {
	return classify.Options{
		AcceptedVersions: c.SupportedVersions,
		VersionKey:       c.VersionKey,
		RequiredKeys:     c.RequiredKeys,
		Window:           c.Window,
		CreatedAtKey:     c.CreatedAtKey,
		Content:          contentChecks[c.Function],
	}
}

// PrintReport prints a classification for a person. With command (the
// tool's Command) and the DLQ's name, each group's next step names the
// redrive command that moves that group alone.
func PrintReport(w io.Writer, name string, r classify.Report, command func(args ...string) string) {
	fmt.Fprintf(w, "verdict: %s  (%d messages%s)\n", strings.ToUpper(string(r.Verdict)), r.Total, inName(name))
	for _, e := range r.Evidence {
		fmt.Fprintf(w, "  - %s\n", e)
	}
	examples := map[classify.Verdict][]string{}
	for _, m := range r.Messages {
		if len(examples[m.Class]) < 3 {
			examples[m.Class] = append(examples[m.Class], m.MessageID)
		}
	}
	for _, g := range r.Groups {
		fmt.Fprintf(w, "\n%s: %d messages\n", strings.ToUpper(string(g.Class)), g.N)
		for _, e := range g.Evidence {
			fmt.Fprintf(w, "  - %s\n", e)
		}
		fmt.Fprintf(w, "  - examples (search the logs by message_id): %s\n", strings.Join(examples[g.Class], ", "))
		fmt.Fprintf(w, "  next: %s\n", g.Next)
		if command == nil || name == "" {
			continue
		}
		switch g.Class {
		case classify.Transient, classify.Data:
			fmt.Fprintf(w, "  then: %s\n", command("redrive", name, "--only", string(g.Class), "--confirm-fixed"))
		case classify.Expired:
			fmt.Fprintf(w, "  then (the checked ones only): %s\n", command("redrive", name, "--only", string(g.Class), "--readmit-expired", "--confirm-fixed"))
		case classify.Poison:
			for _, v := range unsupportedVersions(r) {
				fmt.Fprintf(w, "  then, once a consumer accepts version %s: %s\n", v, command("redrive", name, "--only", "poison", "--version", v, "--confirm-fixed"))
			}
		}
	}
}

// unsupportedVersions are the schema versions poison messages were
// refused for (a deploy of the consumer can make those valid).
func unsupportedVersions(r classify.Report) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Class == classify.Poison && strings.HasPrefix(m.Why, "schema: version") && !slices.Contains(out, m.Version) {
			out = append(out, m.Version)
		}
	}
	sort.Strings(out)
	return out
}

func inName(name string) string {
	if name == "" {
		return ""
	}
	return " in " + name
}

// Row is one inspected message, for JSON output.
type Row struct {
	MessageID string `json:"message_id"`
	PedidoID  string `json:"pedido_id,omitempty"`
	Sent      string `json:"sent"`
	// FirstReceive is SQS's ApproximateFirstReceiveTimestamp.
	FirstReceive string `json:"first_receive"`
	// ReceiveCount is SQS's ApproximateReceiveCount, this look included
	// (classify reports the count before the DLQ).
	ReceiveCount    int    `json:"approximate_receive_count"`
	Size            int    `json:"size"`
	Version         string `json:"version"`
	Group           string `json:"group,omitempty"`
	Origin          string `json:"origin"`
	FailureClass    string `json:"mf_failure_class,omitempty"`
	FailureReason   string `json:"mf_failure_reason,omitempty"`
	ConsumerVersion string `json:"mf_consumer_version,omitempty"`
}

// Rows are the table's lines as values.
func Rows(msgs []types.Message) []Row {
	ids := map[string]string{}
	for _, m := range classify.Classify(msgs, classify.Options{VersionKey: "-"}).Messages {
		ids[m.MessageID] = m.PedidoID
	}
	out := make([]Row, 0, len(msgs))
	for _, m := range msgs {
		r, _ := rowOf(m)
		r.PedidoID = ids[aws.ToString(m.MessageId)]
		out = append(out, r)
	}
	return out
}

// rowOf is m's row without its PedidoID; ok reports that m carries a
// consumer's failure attributes (sqsbatch.ParseDeadLetter).
func rowOf(m types.Message) (r Row, ok bool) {
	dl, ok := sqsbatch.ParseDeadLetter(m.MessageAttributes)
	r = Row{MessageID: aws.ToString(m.MessageId), Sent: stamp(classify.Stamp(m, types.MessageSystemAttributeNameSentTimestamp)),
		FirstReceive: stamp(classify.Stamp(m, types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)), ReceiveCount: classify.Receives(m),
		Size: len(aws.ToString(m.Body)), Version: bodyVersion(aws.ToString(m.Body)), Group: m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], Origin: "unknown"}
	switch {
	case m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] != "":
		r.Origin = "redrive"
	case ok:
		r.Origin = "consumer"
	}
	if ok {
		r.FailureClass, r.FailureReason, r.ConsumerVersion = dl.Class, dl.Reason, dl.ConsumerVersion
	}
	return r, ok
}
