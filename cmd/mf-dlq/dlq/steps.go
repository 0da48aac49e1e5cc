package dlq

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// ContainResult is what Contain measured: the DLQ's depth (visible and in
// flight) at each sample, and the sources' consumers as left.
type ContainResult struct {
	DLQDepth  []int     `json:"dlq_depth"`
	Growing   bool      `json:"growing"`
	Consumers []Mapping `json:"consumers"`
}

// Contain (runbook step 1) samples the DLQ's depth over window, shows each
// source's depth, oldest message and consumers and, with enable set,
// enables or disables them.
func (t *Tool) Contain(ctx context.Context, tg *Target, window time.Duration, samples int, enable *bool) (ContainResult, error) {
	var res ContainResult
	w := t.out()
	start := t.Clock.Now()
	for i := range max(samples, 2) {
		if i > 0 {
			if err := t.Clock.Sleep(ctx, window/time.Duration(max(samples, 2)-1)); err != nil {
				return res, err
			}
		}
		v, f, _, err := t.depth(ctx, tg.DLQ.URL)
		if err != nil {
			return res, fmt.Errorf("sample %s: %w", tg.DLQ.Name, err)
		}
		res.DLQDepth = append(res.DLQDepth, v+f)
		fmt.Fprintf(t.log(), "  %s  %s: %d messages\n", t.Clock.Now().Sub(start).Round(time.Second), tg.DLQ.Name, v+f)
	}
	first, last := res.DLQDepth[0], res.DLQDepth[len(res.DLQDepth)-1]
	if res.Growing = last > first; res.Growing {
		fmt.Fprintf(w, "DLQ %s: %d → %d messages over %s: GROWING (+%d, %.1f/min). The failure is live: consider --disable-consumer.\n", tg.DLQ.Name, first, last, window, last-first, float64(last-first)/window.Minutes())
	} else {
		fmt.Fprintf(w, "DLQ %s: %d → %d messages over %s: not growing. Not live right now: classify calmly (mf-dlq classify).\n", tg.DLQ.Name, first, last, window)
	}
	if len(tg.Sources) == 0 {
		fmt.Fprintf(w, "No SQS queue dead-letters into %s (the DLQ of an SNS subscription or EventBridge target?): there is no consumer to disable here.\n", tg.DLQ.Name)
	}
	for _, s := range tg.Sources {
		a, err := t.attributes(ctx, s.URL)
		if err != nil {
			fmt.Fprintf(w, "source %s: cannot read attributes: %v\n", s.Name, err)
		}
		_, maxReceives, _ := s.redrivePolicy()
		fmt.Fprintf(w, "source %s: %s visible, %s in flight, %s delayed; retention %s, maxReceiveCount %d\n", s.Name, a[string(types.QueueAttributeNameApproximateNumberOfMessages)],
			a[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], a[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)], retention(s), maxReceives)
		switch ages, err := t.metric(ctx, s.Name, "ApproximateAgeOfOldestMessage", cwtypes.StatisticMaximum, t.Clock.Now().Add(-15*time.Minute)); {
		case err != nil:
			fmt.Fprintf(w, "  age of oldest message: %s\n", err)
		case len(ages) == 0:
			fmt.Fprintf(w, "  age of oldest message: no datapoint in the last 15 min (an idle queue publishes none)\n")
		default:
			fmt.Fprintf(w, "  age of oldest message: %s (ApproximateAgeOfOldestMessage)\n", time.Duration(ages[0]*float64(time.Second)))
		}
		ms, err := t.consumers(ctx, s)
		if err != nil && enable == nil {
			fmt.Fprintf(w, "  consumers: %s\n", err)
			continue
		} else if err != nil {
			return res, fmt.Errorf("cannot toggle the consumer of %s: %w", s.Name, err)
		}
		if len(ms) == 0 {
			fmt.Fprintf(w, "  consumers: no Lambda event source mapping reads %s\n", s.Name)
		}
		for _, m := range ms {
			fmt.Fprintf(w, "  consumer %s: mapping %s %s\n", m.FunctionARN, m.UUID, m.State)
			if enable != nil {
				out, err := t.Lambda.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: &m.UUID, Enabled: enable})
				if err != nil {
					return res, fmt.Errorf("update event source mapping %s: %w", m.UUID, awsError("lambda:UpdateEventSourceMapping", err))
				}
				m.State = aws.ToString(out.State)
				fmt.Fprintf(w, "  → mapping %s is now %s\n", m.UUID, m.State)
			}
			res.Consumers = append(res.Consumers, m)
		}
		switch {
		case len(ms) > 0 && enable != nil && !*enable:
			fmt.Fprintf(w, "  Consumption of %s is stopped: new messages wait there instead of burning receives into the DLQ. Messages already in flight finish or come back. "+
				"They wait at most the retention period (%s) from when they were SENT, then SQS deletes them silently (they never reach the DLQ): re-enable (--enable-consumer) well before the oldest reaches that age.\n", s.Name, retention(s))
		case len(ms) > 0 && enable != nil:
			fmt.Fprintf(w, "  Consumption of %s resumes; watch the DLQ (mf-dlq contain) for a few minutes.\n", s.Name)
		}
	}
	return res, nil
}

func retention(q QueueRef) string {
	return sqsbatch.Days(time.Duration(atoi(q.Attrs[string(types.QueueAttributeNameMessageRetentionPeriod)])) * time.Second)
}

// Inspect (runbook step 2) peeks at up to n messages, writes them to save
// as WriteMessages does, prints a table and returns them.
func (t *Tool) Inspect(ctx context.Context, tg *Target, n int, save io.Writer) ([]types.Message, error) {
	msgs, err := t.peek(ctx, tg.DLQ, n)
	if err != nil {
		return nil, err
	} else if len(msgs) == 0 {
		return nil, t.emptyError(ctx, tg.DLQ)
	} else if save != nil {
		if err := WriteMessages(save, msgs); err != nil {
			return nil, fmt.Errorf("save messages: %w", err)
		}
	}
	fmt.Fprintf(t.out(), "%d messages of %s (received with VisibilityTimeout=%s, not deleted, made visible again):\n\n", len(msgs), tg.DLQ.Name, PeekVisibility)
	tw := tabwriter.NewWriter(t.out(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MESSAGE ID\tPEDIDO\tSENT (UTC)\tFIRST RECEIVE\tRECV\tSIZE\tVER\tGROUP\tORIGIN\tFAILURE\tCONSUMER")
	for _, m := range msgs {
		dl, ok := sqsbatch.ParseDeadLetter(m.MessageAttributes)
		failure := []rune(strings.ReplaceAll(dl.Class+": "+dl.Reason, "\n", " "))
		if !ok {
			failure = []rune("-")
		} else if len(failure) > 60 {
			failure = append(failure[:59], '…')
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", aws.ToString(m.MessageId), cmp.Or(pedidoID(aws.ToString(m.Body)), "-"),
			fmtTime(stamp(m, types.MessageSystemAttributeNameSentTimestamp)), fmtTime(stamp(m, types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)), receives(m),
			len(aws.ToString(m.Body)), bodyVersion(aws.ToString(m.Body)), cmp.Or(m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], "-"), origin(m, ok), string(failure), cmp.Or(dl.ConsumerVersion, "-"))
	}
	return msgs, tw.Flush()
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04:05")
}

// bodyVersion is the body's "version" as text, "?" for a body that is not
// a JSON object, "-" when absent.
func bodyVersion(body string) string {
	var env map[string]json.RawMessage
	if json.Unmarshal([]byte(body), &env) != nil || env == nil {
		return "?"
	} else if v, ok := env["version"]; ok {
		return strings.Trim(string(v), `"`)
	}
	return "-"
}

// Classify peeks at up to max messages and classifies them against opts.
func (t *Tool) Classify(ctx context.Context, tg *Target, max int, opts Options) (Report, error) {
	msgs, err := t.peek(ctx, tg.DLQ, max)
	if err != nil {
		return Report{}, err
	} else if len(msgs) == 0 {
		return Report{}, t.emptyError(ctx, tg.DLQ)
	} else if len(msgs) == max {
		fmt.Fprintf(t.log(), "note: classified the first %d messages (--max)\n", max)
	}
	opts.Now = t.Clock.Now()
	return Classify(msgs, opts), nil
}

// ConsumerOptions are the expectations of the target's consumer from
// the registry with the maxReceiveCount of its sources.
func ConsumerOptions(tg *Target) Options {
	var o Options
	o.Consumer, _ = tg.Consumer()
	for _, src := range tg.Sources {
		if _, n, ok := src.redrivePolicy(); ok && n > 0 && src.ARN != "" {
			if o.SourceMaxReceives == nil {
				o.SourceMaxReceives = map[string]int{}
			}
			o.SourceMaxReceives[src.ARN] = n
		}
	}
	return o
}

// PrintReport prints a classification for a person; with command, each
// group's next step names the redrive that moves that group alone.
func PrintReport(w io.Writer, name string, r Report, command func(args ...string) string) {
	in := ""
	if name != "" {
		in = " in " + name
	}
	fmt.Fprintf(w, "verdict: %s  (%d messages%s)\n", strings.ToUpper(string(r.Verdict)), r.Total, in)
	for _, e := range r.Evidence {
		fmt.Fprintf(w, "  - %s\n", e)
	}
	examples := map[Verdict][]string{}
	var versions []string // the schema versions of poison (a consumer's deploy can make them valid)
	for _, m := range r.Messages {
		if len(examples[m.Class]) < 3 {
			examples[m.Class] = append(examples[m.Class], m.MessageID)
		}
		if m.Class == Poison && strings.HasPrefix(m.Why, "schema: version") && !slices.Contains(versions, m.Version) {
			versions = append(versions, m.Version)
		}
	}
	slices.Sort(versions)
	for _, g := range r.Groups {
		fmt.Fprintf(w, "\n%s: %d messages\n", strings.ToUpper(string(g.Class)), g.N)
		for _, e := range g.Evidence {
			fmt.Fprintf(w, "  - %s\n", e)
		}
		fmt.Fprintf(w, "  - examples (search the logs by message_id): %s\n  next: %s\n", strings.Join(examples[g.Class], ", "), g.Next)
		switch {
		case command == nil || name == "":
		case g.Class == Transient, g.Class == Data:
			fmt.Fprintf(w, "  then: %s\n", command("redrive", name, "--only", string(g.Class), "--confirm-fixed"))
		case g.Class == Expired:
			fmt.Fprintf(w, "  then (the checked ones only): %s\n", command("redrive", name, "--only", string(g.Class), "--readmit-expired", "--confirm-fixed"))
		case g.Class == Poison:
			for _, v := range versions {
				fmt.Fprintf(w, "  then, once a consumer accepts version %s: %s\n", v, command("redrive", name, "--only", "poison", "--version", v, "--confirm-fixed"))
			}
		}
	}
}

// Check statuses: unknown (could not be measured) never counts as ok.
const (
	CheckOK      = "ok"
	CheckFailed  = "failed"
	CheckUnknown = "unknown"
	CheckSkipped = "skipped"
)

// Check is one thing Verify looked at.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
}

// VerifyResult is true only when no check failed or is unknown.
type VerifyResult struct {
	Verified bool    `json:"verified"`
	Checks   []Check `json:"checks"`
}

// Verify (runbook step 6) answers VERIFIED only when the DLQ is at 0, each
// source's consumer is enabled and its backlog empty or falling within
// window, and (expect > 0) the sources' deletions since then reached
// expect; what it cannot measure is unknown and blocks the yes.
func (t *Tool) Verify(ctx context.Context, tg *Target, expect int, since time.Time, window time.Duration) (VerifyResult, error) {
	w := t.out()
	var res VerifyResult
	add := func(name, status, format string, args ...any) {
		res.Checks = append(res.Checks, Check{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)})
		fmt.Fprintf(w, "  %-8s %s\n", strings.ToUpper(status), res.Checks[len(res.Checks)-1].Detail)
	}
	fmt.Fprintf(w, "verify %s:\n", tg.DLQ.Name)
	visible, inflight, delayed, err := t.depth(ctx, tg.DLQ.URL)
	if err != nil {
		return res, fmt.Errorf("read %s: %w", tg.DLQ.Name, err)
	} else if n := visible + inflight + delayed; n > 0 {
		add("dlq-empty", CheckFailed, "DLQ %s holds %d messages (%d visible, %d in flight, %d delayed): if they arrived after the redrive, the cause is not fixed or they were misclassified: %s",
			tg.DLQ.Name, n, visible, inflight, delayed, t.Command("classify", tg.DLQ.Name))
	} else {
		add("dlq-empty", CheckOK, "DLQ %s: 0 visible, 0 in flight, 0 delayed", tg.DLQ.Name)
	}
	if tk, err := t.moveTask(ctx, tg.DLQ); err == nil && tk != nil {
		switch aws.ToString(tk.Status) {
		case "RUNNING", "CANCELLING":
			add("move-task", CheckFailed, "a move task is still running (%s, moved %d)", aws.ToString(tk.Status), tk.ApproximateNumberOfMessagesMoved)
		case "FAILED":
			add("move-task", CheckFailed, "the last move task failed after %d messages: %s", tk.ApproximateNumberOfMessagesMoved, aws.ToString(tk.FailureReason))
		}
	}
	if len(tg.Sources) == 0 {
		add("sources", CheckUnknown, "no SQS queue dead-letters into %s (an SNS subscription's or EventBridge target's DLQ): check that the re-published messages were delivered", tg.DLQ.Name)
	}
	for _, s := range tg.Sources {
		ms, err := t.consumers(ctx, s)
		switch {
		case err != nil:
			add("consumer", CheckUnknown, "consumer of %s: unknown: %s", s.Name, err)
		case len(ms) == 0:
			add("consumer", CheckFailed, "no Lambda event source mapping reads %s: nothing will process the redriven messages", s.Name)
		}
		for _, m := range ms {
			if m.State != "Enabled" {
				add("consumer", CheckFailed, "the consumer of %s is %s (mapping %s): the redriven messages wait there and expire with its retention; re-enable it: %s",
					s.Name, m.State, m.UUID, t.Command("contain", tg.DLQ.Name, "--enable-consumer"))
			} else {
				add("consumer", CheckOK, "consumer of %s: mapping %s Enabled (%s)", s.Name, m.UUID, m.FunctionARN)
			}
		}
	}
	for _, s := range tg.Sources {
		if err := t.verifyBacklog(ctx, s, window, add); err != nil {
			return res, err
		}
	}
	if expect <= 0 {
		add("deletions", CheckSkipped, "the sources' deletions: not checked (pass --expect N --since TIME, as redrive's next: line does)")
	} else {
		total, unknown := 0.0, error(nil)
		for _, s := range tg.Sources {
			vs, err := t.metric(ctx, s.Name, "NumberOfMessagesDeleted", cwtypes.StatisticSum, since)
			if err != nil {
				unknown = fmt.Errorf("NumberOfMessagesDeleted of %s: %w", s.Name, err)
				break
			}
			for _, v := range vs {
				total += v
			}
		}
		at := since.UTC().Format("2006-01-02 15:04")
		switch {
		case unknown != nil:
			add("deletions", CheckUnknown, "%s", unknown)
		case total < float64(expect):
			add("deletions", CheckFailed, "the sources deleted %.0f messages since %s UTC, fewer than the %d redriven: consumers still working (CloudWatch lags a few minutes: run verify again), or failing again", total, at, expect)
		default:
			add("deletions", CheckOK, "the sources deleted %.0f messages since %s UTC (%d redriven)", total, at, expect)
		}
	}
	var problems []string
	failed := 0
	for _, c := range res.Checks {
		if c.Status == CheckFailed {
			problems, failed = slices.Insert(problems, failed, c.Detail), failed+1
		} else if c.Status == CheckUnknown {
			problems = append(problems, c.Detail)
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "NOT VERIFIED: %d checks failed, %d unknown; first: %s\n", failed, len(problems)-failed, problems[0])
		return res, fmt.Errorf("%w: %s", ErrNotVerified, problems[0])
	}
	res.Verified = true
	fmt.Fprintf(w, "VERIFIED: %s is empty, its sources' consumers run and their backlog drains; record the incident (runbook step 7)\n", tg.DLQ.Name)
	return res, nil
}

// verifyBacklog passes when the source holds nothing, or less within
// window than at first (sampled six times; the first fall is enough).
func (t *Tool) verifyBacklog(ctx context.Context, s QueueRef, window time.Duration, add func(name, status, format string, args ...any)) error {
	v, f, d, err := t.depth(ctx, s.URL)
	first, watched := v+f+d, time.Duration(0)
	for i := 0; err == nil && first > 0 && v+f+d >= first && i < 6; i++ {
		if t.Clock.Sleep(ctx, window/6) != nil {
			return fmt.Errorf("interrupted while watching the backlog of %s: %w", s.Name, ctx.Err())
		}
		watched += window / 6
		v, f, d, err = t.depth(ctx, s.URL)
	}
	switch last := v + f + d; {
	case err != nil:
		add("backlog", CheckUnknown, "backlog of %s: unknown: %s", s.Name, err)
	case first == 0:
		add("backlog", CheckOK, "source %s: empty (0 visible, 0 in flight, 0 delayed)", s.Name)
	case last < first:
		add("backlog", CheckOK, "source %s: backlog draining, %d → %d messages in %s", s.Name, first, last, watched)
	case last == first:
		add("backlog", CheckFailed, "source %s: %d messages waiting, not falling in %s (%d visible, %d in flight): the consumer is disabled, throttled or failing, so the redrive is not processed yet", s.Name, last, watched, v, f)
	default:
		add("backlog", CheckFailed, "source %s: %d messages waiting, rising from %s in %s (%d visible, %d in flight): the consumer is disabled, throttled or failing, so the redrive is not processed yet", s.Name, last, strconv.Itoa(first), watched, v, f)
	}
	return nil
}
