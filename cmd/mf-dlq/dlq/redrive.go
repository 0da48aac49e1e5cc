package dlq

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/classify"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/replaywindow"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// Redrive defaults.
const (
	// DefaultRate is the runbook's redrive rate: 10 messages/s, which the
	// consumers' dependencies take on top of normal traffic.
	DefaultRate = 10
	// surveyMax is the most messages surveyed before a redrive (to choose
	// the mode and warn about old messages).
	surveyMax = 1000
	// stepTimeout bounds one send or delete, which completes even after
	// Ctrl-C so that a stop never splits a message's send from its delete.
	stepTimeout = 30 * time.Second
)

// Redrive modes.
const (
	ModeAuto = "auto" // task when every message came from SQS's redrive, else loop
	ModeTask = "task" // StartMessageMoveTask with MaxNumberOfMessagesPerSecond
	ModeLoop = "loop" // receive → send → delete with a token bucket
)

// RedriveOptions configures Redrive.
type RedriveOptions struct {
	// ConfirmFixed is the operator's statement that the cause is fixed
	// (runbook step 4). Required unless DryRun.
	ConfirmFixed bool
	// Rate in messages per second; 0 means DefaultRate. At most 500.
	Rate float64
	// DryRun prints the plan and moves nothing.
	DryRun bool
	// Max moves at most this many messages (loop mode); 0 means all.
	Max int
	// To overrides the destination (queue name or URL) of every message.
	To string
	// Mode is ModeAuto (default), ModeTask or ModeLoop.
	Mode string
	// ReadmitExpired redrives the messages older than their consumer's
	// replay window too, each with the re-admission mark
	// (lambdaapi.AttrReadmision) that makes the consumer process it: the
	// operator's statement that, for each of them, the side effect did not
	// happen (docs/runbooks/dlq.md#expired-messages). Without it they stay
	// in the DLQ and Redrive returns ErrExpired.
	ReadmitExpired bool
	// ProgressEvery is the interval of progress lines. Default 2 s.
	ProgressEvery time.Duration
	// Only selects the messages to move by their classify verdict
	// (transient, data, poison, expired); the others stay in the DLQ.
	// Empty selects every verdict but refuses (ErrRefused) while the
	// selection holds poison or data messages: those must be named.
	Only []classify.Verdict
	// Reason selects the messages whose consumer reason
	// (mf-failure-reason) or classify finding contains it.
	Reason string
	// Version selects the messages of this schema version ("2").
	Version string
}

// Selection reports whether any of Only, Reason and Version is set.
func (o RedriveOptions) Selection() bool { return len(o.Only) > 0 || o.Reason != "" || o.Version != "" }

// ParseVerdicts parses a comma-separated list of verdicts for
// RedriveOptions.Only.
func ParseVerdicts(s string) ([]classify.Verdict, error) {
	var out []classify.Verdict
	for _, p := range strings.Split(s, ",") {
		v := classify.Verdict(strings.ToLower(strings.TrimSpace(p)))
		switch v {
		case classify.Transient, classify.Data, classify.Poison, classify.Expired:
			out = append(out, v)
		default:
			return nil, fmt.Errorf("%w: --only %q: want a comma-separated list of transient, data, poison, expired", ErrUsage, s)
		}
	}
	return out, nil
}

// ErrRefused: the redrive would move messages classify found poison or
// data without the operator naming them (RedriveOptions.Only).
var ErrRefused = errors.New("redrive refused")

// selector decides, from the survey's classification, which DLQ messages
// a redrive moves.
type selector struct {
	opts    RedriveOptions
	byID    map[string]classify.Message
	planned map[classify.Verdict]int // selected, by verdict
	left    map[classify.Verdict]int // not selected, by verdict
}

func newSelector(report classify.Report, opts RedriveOptions) *selector {
	s := &selector{opts: opts, byID: map[string]classify.Message{}, planned: map[classify.Verdict]int{}, left: map[classify.Verdict]int{}}
	for _, m := range report.Messages {
		s.byID[m.MessageID] = m
		if s.match(m) {
			s.planned[m.Class]++
		} else {
			s.left[m.Class]++
		}
	}
	return s
}

func (s *selector) match(m classify.Message) bool {
	if len(s.opts.Only) > 0 && !slices.Contains(s.opts.Only, m.Class) {
		return false
	}
	if s.opts.Reason != "" && !strings.Contains(m.Reason, s.opts.Reason) && !strings.Contains(m.Why, s.opts.Reason) {
		return false
	}
	return s.opts.Version == "" || m.Version == s.opts.Version
}

// selected reports whether the DLQ message with this id is to move; one
// the survey did not see is moved only without a selection.
func (s *selector) selected(id string) (bool, classify.Verdict) {
	m, ok := s.byID[id]
	if !ok {
		return !s.opts.Selection(), ""
	}
	return s.match(m), m.Class
}

// refusal explains why the selection cannot move as asked, "" when it can.
func (s *selector) refusal() string {
	if len(s.opts.Only) > 0 {
		return ""
	}
	var named []string
	for _, v := range []classify.Verdict{classify.Poison, classify.Data} {
		if n := s.planned[v]; n > 0 {
			named = append(named, fmt.Sprintf("%d %s", n, v))
		}
	}
	if len(named) == 0 {
		return ""
	}
	var why []string
	if s.planned[classify.Poison] > 0 {
		why = append(why, "a redrive does not make poison valid (deploy a consumer that accepts it first)")
	}
	if s.planned[classify.Data] > 0 {
		why = append(why, "data messages fail again until the data is fixed")
	}
	return fmt.Sprintf("the messages to move include %s (mf-dlq classify): %s. "+
		"Redrive one group at a time (--only transient), or name the groups to move (--only %s)", strings.Join(named, " and "), strings.Join(why, "; "), strings.Join(s.verdicts(), ","))
}

func (s *selector) verdicts() []string {
	var out []string
	for _, v := range []classify.Verdict{classify.Transient, classify.Data, classify.Poison, classify.Expired} {
		if s.planned[v] > 0 {
			out = append(out, string(v))
		}
	}
	return out
}

// describe is the plan's line of counts per verdict.
func (s *selector) describe() string {
	var parts []string
	for _, v := range []classify.Verdict{classify.Transient, classify.Data, classify.Poison, classify.Expired} {
		if n := s.planned[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (move)", n, v))
		}
		if n := s.left[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (stay)", n, v))
		}
	}
	return strings.Join(parts, ", ")
}

func (s *selector) total() int {
	n := 0
	for _, c := range s.planned {
		n += c
	}
	return n
}

// RedriveResult is what Redrive did.
type RedriveResult struct {
	Mode         string         `json:"mode"`
	Surveyed     int            `json:"surveyed"`     // messages in the DLQ when it started (surveyed)
	Planned      int            `json:"planned"`      // of them, selected to move
	ByVerdict    map[string]int `json:"by_verdict"`   // selected, by classify verdict
	Left         map[string]int `json:"left"`         // not selected, by verdict: they stay in the DLQ
	Moved        int            `json:"moved"`        // sent to a destination and deleted from the DLQ
	Destinations map[string]int `json:"destinations"` // queue name -> messages moved there (loop mode)
	Unplaced     int            `json:"unplaced"`     // messages left in the DLQ for want of a destination
	Expired      int            `json:"expired_left"` // messages left in the DLQ: older than the replay window
	Readmitted   int            `json:"readmitted"`   // expired messages moved with the re-admission mark
	Unselected   int            `json:"unselected"`   // messages the selection left in the DLQ
	Started      time.Time      `json:"started"`
	Elapsed      time.Duration  `json:"elapsed_ns"`
	DryRun       bool           `json:"dry_run"`
	// Next is the command to run next (verify), with the connection flags given.
	Next string `json:"next,omitempty"`
}

// Redrive moves the DLQ's messages back to where they came from at a rate.
// See the package documentation for its guarantees.
func (t *Tool) Redrive(ctx context.Context, target *Target, opts RedriveOptions) (RedriveResult, error) {
	res := RedriveResult{Destinations: map[string]int{}}
	if !opts.ConfirmFixed && !opts.DryRun {
		return res, fmt.Errorf("%w: fix the cause first (runbook step 4, docs/runbooks/dlq.md), then re-run with --confirm-fixed; --dry-run shows the plan", ErrNotConfirmed)
	}
	opts.Rate = cmp.Or(opts.Rate, DefaultRate)
	if opts.Rate < 0 || opts.Rate > MaxMoveRate || math.IsNaN(opts.Rate) {
		return res, fmt.Errorf("%w: --rate %v must be in (0, %d]", ErrUsage, opts.Rate, MaxMoveRate)
	}
	opts.Mode = cmp.Or(opts.Mode, ModeAuto)
	if opts.Mode != ModeAuto && opts.Mode != ModeTask && opts.Mode != ModeLoop {
		return res, fmt.Errorf("%w: --mode %q (want auto, task or loop)", ErrUsage, opts.Mode)
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 2 * time.Second
	}
	if err := t.checkNoTask(ctx, target.DLQ); err != nil {
		return res, err
	}
	var to *QueueRef
	if opts.To != "" {
		url := opts.To
		if !strings.Contains(url, "://") {
			u, err := t.queueURL(ctx, opts.To)
			if err != nil {
				return res, fmt.Errorf("destination --to %s: %w", opts.To, err)
			}
			url = u
		}
		r, err := t.ref(ctx, url)
		if err != nil {
			return res, err
		}
		to = &r
	}
	if len(target.Sources) == 0 && to == nil {
		return res, fmt.Errorf("%w: no queue names %s as its DLQ: pass --to QUEUE, or re-publish from the SNS subscription or EventBridge target it serves", ErrNotDLQ, target.DLQ.Name)
	}

	// Survey: how many, from where, how old.
	msgs, err := t.peek(ctx, target.DLQ, surveyMax)
	if err != nil {
		return res, err
	}
	if len(msgs) == 0 {
		return res, t.emptyError(ctx, target.DLQ)
	}
	res.Surveyed = len(msgs)
	complete := len(msgs) < surveyMax
	dests := newDestinations(t, target, to)
	expiry := t.expiryOptions(target)
	sel := newSelector(classify.Classify(msgs, expiry), opts)
	plan := map[string]int{}
	allRedriven := true
	expired := 0
	for _, m := range msgs {
		if ok, _ := sel.selected(aws.ToString(m.MessageId)); !ok {
			continue
		}
		if _, old := classify.Expiry(m, expiry); old {
			expired++
		}
		if m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] == "" {
			allRedriven = false
		}
		name, err := dests.nameFor(m)
		if err != nil {
			name = "(no destination: " + err.Error() + ")"
		}
		plan[name]++
	}
	res.Planned = sel.total()
	res.ByVerdict, res.Left = verdictCounts(sel.planned), verdictCounts(sel.left)
	partial := res.Planned < len(msgs)
	mode := opts.Mode
	fractional := opts.Rate != math.Trunc(opts.Rate)
	if mode == ModeAuto {
		mode = ModeLoop
		if allRedriven && complete && to == nil && opts.Max == 0 && expired == 0 && !partial && !fractional {
			mode = ModeTask
		}
	}
	if mode == ModeTask && fractional {
		return res, fmt.Errorf("%w: --mode task moves whole messages per second (SQS's MaxNumberOfMessagesPerSecond), and --rate is %v: give a whole rate, or use --mode loop, which holds a fractional one", ErrUsage, opts.Rate)
	}
	if mode == ModeTask && (!allRedriven || to != nil) {
		return res, fmt.Errorf("%w: --mode task needs every message to have come from SQS's redrive (DeadLetterQueueSourceArn) and no --to; %d surveyed messages were sent to the DLQ by a consumer: use --mode loop", ErrUsage, countWithout(msgs))
	}
	if mode == ModeTask && expired > 0 {
		return res, fmt.Errorf("%w: --mode task moves every message, and %d surveyed messages are older than their consumer's replay window (a move task can neither leave them nor mark them re-admitted): use --mode loop", ErrUsage, expired)
	}
	if mode == ModeTask && (partial || !complete && opts.Selection()) {
		return res, fmt.Errorf("%w: --mode task moves every message, and the selection leaves %d of %d in the DLQ: use --mode loop", ErrUsage, len(msgs)-res.Planned, len(msgs))
	}
	res.Mode = mode
	w := t.out()
	fmt.Fprintf(w, "plan: move %d of the %d messages in %s at %s msg/s (about %s) using %s\n", res.Planned, len(msgs), target.DLQ.Name,
		strconv.FormatFloat(opts.Rate, 'f', -1, 64), eta(res.Planned, opts.Rate), describeMode(mode))
	if !complete {
		fmt.Fprintf(w, "  (surveyed the first %d messages; the DLQ may hold more)\n", surveyMax)
	}
	fmt.Fprintf(w, "  by verdict: %s\n", sel.describe())
	for _, name := range slices.Sorted(maps.Keys(plan)) {
		fmt.Fprintf(w, "  → %s: %d\n", name, plan[name])
	}
	t.warnExpired(target, expired, res.Planned, opts.ReadmitExpired)
	t.warnUnknown(msgs, plan)
	refusal := sel.refusal()
	if opts.DryRun {
		res.DryRun = true
		if refusal != "" {
			fmt.Fprintf(w, "as planned it would be refused: %s\n", refusal)
		}
		fmt.Fprintf(w, "dry run: nothing moved\n")
		return res, nil
	}
	if refusal != "" {
		return res, fmt.Errorf("%w: %s", ErrRefused, refusal)
	}
	if res.Planned == 0 {
		return res, fmt.Errorf("%w: the selection matches none of the %d messages (by verdict: %s)", ErrRefused, len(msgs), sel.describe())
	}
	if expired == res.Planned && complete && !opts.ReadmitExpired {
		res.Expired = expired
		return res, fmt.Errorf("%w: all %d messages; nothing to redrive (see docs/runbooks/dlq.md#expired-messages)", ErrExpired, expired)
	}
	res.Started = t.Clock.Now()
	defer func() { res.Elapsed = t.Clock.Now().Sub(res.Started) }()
	if mode == ModeTask {
		err = t.runTask(ctx, target, opts, &res)
	} else {
		err = t.runLoop(ctx, target, opts, dests, expiry, sel, &res)
	}
	elapsed := t.Clock.Now().Sub(res.Started)
	fmt.Fprintf(w, "moved %d of %d in %s (%.1f msg/s)", res.Moved, res.Planned, elapsed.Round(time.Second), perSecond(res.Moved, elapsed))
	for _, name := range slices.Sorted(maps.Keys(res.Destinations)) {
		fmt.Fprintf(w, "; %s: %d", name, res.Destinations[name])
	}
	fmt.Fprintln(w)
	if res.Unplaced > 0 {
		fmt.Fprintf(w, "%d messages stay in %s: no destination known (pass --to QUEUE)\n", res.Unplaced, target.DLQ.Name)
	}
	if res.Unselected > 0 {
		fmt.Fprintf(w, "%d messages stay in %s: not selected (%s)\n", res.Unselected, target.DLQ.Name, describeLeft(res.Left))
	}
	if res.Readmitted > 0 {
		fmt.Fprintf(w, "%d of them were older than their consumer's replay window and went back re-admitted (%s)\n", res.Readmitted, lambdaapi.AttrReadmision)
	}
	if res.Expired > 0 {
		fmt.Fprintf(w, "%d messages stay in %s: older than their consumer's replay window (mf-dlq classify shows them as expired; docs/runbooks/dlq.md#expired-messages)\n", res.Expired, target.DLQ.Name)
		err = cmp.Or(err, fmt.Errorf("%w: %d messages", ErrExpired, res.Expired))
	}
	if err == nil || errors.Is(err, ErrInterrupted) {
		res.Next = t.Command("verify", target.DLQ.Name, "--expect", strconv.Itoa(res.Moved), "--since", res.Started.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "next: %s\n", res.Next)
	}
	return res, err
}

func verdictCounts(m map[classify.Verdict]int) map[string]int {
	out := map[string]int{}
	for v, n := range m {
		out[string(v)] = n
	}
	return out
}

func describeLeft(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	if len(parts) == 0 {
		return "not in the survey: run redrive again"
	}
	return strings.Join(parts, ", ")
}

func countWithout(msgs []types.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] == "" {
			n++
		}
	}
	return n
}

func describeMode(mode string) string {
	if mode == ModeTask {
		return "an SQS message move task (every message came from the queue's redrive policy)"
	}
	return "receive → send → delete (send first: a stop at any moment leaves at worst a duplicate)"
}

// checkNoTask refuses to start while a move task runs on the DLQ.
func (t *Tool) checkNoTask(ctx context.Context, dlq QueueRef) error {
	tasks, err := t.moveTasks(ctx, dlq.ARN, 10)
	if err != nil {
		if errors.Is(err, ErrPermission) {
			fmt.Fprintf(t.log(), "warning: cannot check for a running move task: %v\n", err)
			return nil
		}
		return fmt.Errorf("list move tasks of %s: %w", dlq.Name, err)
	}
	for _, tk := range tasks {
		if activeTask(tk) {
			cancel := ""
			if tk.TaskHandle != nil {
				cancel = fmt.Sprintf(", or cancel it: aws sqs cancel-message-move-task --task-handle %s", *tk.TaskHandle)
			}
			toMove := int64(-1)
			if tk.ApproximateNumberOfMessagesToMove != nil {
				toMove = *tk.ApproximateNumberOfMessagesToMove
			}
			return fmt.Errorf("%w: on %s, %s since %s UTC (moved %d of %d): wait for it (mf-dlq verify)%s",
				ErrMoveTaskRunning, dlq.Name, aws.ToString(tk.Status), time.UnixMilli(tk.StartedTimestamp).UTC().Format("2006-01-02 15:04:05"), tk.ApproximateNumberOfMessagesMoved, toMove, cancel)
		}
	}
	return nil
}

// expiryOptions are the target's consumer's replay window, at the tool's
// clock.
func (t *Tool) expiryOptions(target *Target) classify.Options {
	o := ConsumerOptions(target)
	o.Now = t.Clock.Now()
	return o
}

// warnExpired says what happens to the messages older than their
// consumer's replay window.
func (t *Tool) warnExpired(target *Target, expired, total int, readmit bool) {
	if expired == 0 {
		if readmit {
			fmt.Fprintf(t.log(), "note: --readmit-expired: no surveyed message is older than its consumer's replay window\n")
		}
		return
	}
	who := "its consumer"
	if target.Catalog != nil && len(target.Catalog.Consumers) > 0 {
		c := target.Catalog.Consumers[0]
		who = fmt.Sprintf("%s (%s, a %s window)", c.Function, c.IdempotencyKey, replaywindow.Days(c.Window))
	}
	if readmit {
		fmt.Fprintf(t.log(), "WARNING: re-admitting %d of %d messages older than the replay window of %s: they go back with %s and the consumer runs them although their records may be gone. "+
			"You state that, for each, the side effect did not happen (docs/runbooks/dlq.md#expired-messages).\n", expired, total, who, lambdaapi.AttrReadmision)
		return
	}
	fmt.Fprintf(t.log(), "WARNING: %d of %d messages are older than the replay window of %s: their idempotency records may be gone, so a duplicate would run its side effect again, and the consumer refuses them. "+
		"They stay in the DLQ. Check each order (docs/runbooks/dlq.md#expired-messages); re-admit the ones whose side effect did not happen with --readmit-expired.\n", expired, total, who)
}

// warnUnknown warns about messages first received more than a day ago
// whose destination's consumers config/catalog does not know: their
// replay window is unknown, and the library's default records live 24 h.
func (t *Tool) warnUnknown(msgs []types.Message, plan map[string]int) {
	var who []string
	for name := range plan {
		if q, _, isDLQ, ok := catalog.FindPhysical(name); !ok || isDLQ || len(q.Consumers) == 0 {
			who = append(who, name)
		}
	}
	if len(who) == 0 {
		return
	}
	now := t.Clock.Now()
	old := 0
	for _, m := range msgs {
		if ts := firstSeen(m); !ts.IsZero() && now.Sub(ts) > idempotency.DefaultExpiry {
			old++
		}
	}
	if old == 0 {
		return
	}
	sort.Strings(who)
	fmt.Fprintf(t.log(), "WARNING: %d of %d messages were first received more than %s ago, and config/catalog does not know the replay window of the consumers of %s: "+
		"if their records have expired, a message that had in fact completed runs again. Check those orders before redriving.\n",
		old, len(msgs), idempotency.DefaultExpiry, strings.Join(who, ", "))
}

// firstSeen is when a consumer may first have processed the message: its
// first receive when known (kept by SQS's redrive), else when it was sent.
func firstSeen(m types.Message) time.Time {
	for _, k := range []string{string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp), string(types.MessageSystemAttributeNameSentTimestamp)} {
		if t := classify.Stamp(m, types.MessageSystemAttributeName(k)); !t.IsZero() {
			if k == string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp) && m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] == "" {
				// A consumer-sent DLQ message is new: its first receive is
				// the inspection's, so use its SentTimestamp (the failure).
				continue
			}
			return t
		}
	}
	return time.Time{}
}

// runTask runs an SQS message move task and follows it.
func (t *Tool) runTask(ctx context.Context, target *Target, opts RedriveOptions, res *RedriveResult) error {
	r := max(1, int(opts.Rate))
	started, err := t.SQS.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: &target.DLQ.ARN, MaxNumberOfMessagesPerSecond: aws.Int32(int32(r))})
	if err != nil {
		return fmt.Errorf("start the move task on %s: %w", target.DLQ.Name, sqsError("StartMessageMoveTask", err))
	}
	handle := aws.ToString(started.TaskHandle)
	fmt.Fprintf(t.log(), "move task started (handle %s, %d msg/s); Ctrl-C cancels it (moved messages stay moved)\n", handle, r)
	prog := &progress{t: t, total: res.Planned, start: res.Started}
	for {
		if err := t.Clock.Sleep(ctx, opts.ProgressEvery); err != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepTimeout)
			defer cancel()
			var moved int64
			cancelled, cerr := t.SQS.CancelMessageMoveTask(dctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: &handle})
			if cerr = sqsError("CancelMessageMoveTask", cerr); cerr != nil && !errors.Is(cerr, ErrTaskNotFound) {
				return fmt.Errorf("%w; cancelling the move task failed: %w (cancel it by hand: aws sqs cancel-message-move-task --task-handle %s)", ErrInterrupted, cerr, handle)
			}
			if cancelled != nil {
				moved = cancelled.ApproximateNumberOfMessagesMoved
			}
			res.Moved = int(moved)
			return fmt.Errorf("%w: move task cancelled after %d messages", ErrInterrupted, moved)
		}
		tasks, err := t.moveTasks(ctx, target.DLQ.ARN, 1)
		if err != nil {
			return fmt.Errorf("follow the move task: %w (it keeps running; see aws sqs list-message-move-tasks)", err)
		}
		if len(tasks) == 0 {
			return fmt.Errorf("the move task of %s disappeared from ListMessageMoveTasks", target.DLQ.Name)
		}
		tk := tasks[0]
		res.Moved = int(tk.ApproximateNumberOfMessagesMoved)
		if tk.ApproximateNumberOfMessagesToMove != nil {
			prog.total = int(*tk.ApproximateNumberOfMessagesToMove)
		}
		prog.show(res.Moved)
		switch aws.ToString(tk.Status) {
		case "COMPLETED":
			return nil
		case "FAILED":
			return fmt.Errorf("the move task failed after %d messages: %s", tk.ApproximateNumberOfMessagesMoved, aws.ToString(tk.FailureReason))
		case "CANCELLED":
			return fmt.Errorf("%w: the move task was cancelled (by someone else?) after %d messages", ErrInterrupted, tk.ApproximateNumberOfMessagesMoved)
		}
	}
}

// runLoop moves messages one by one: receive, wait for a token, send to the
// destination, delete from the DLQ.
func (t *Tool) runLoop(ctx context.Context, target *Target, opts RedriveOptions, dests *destinations, expiry classify.Options, sel *selector, res *RedriveResult) error {
	lim := rate.NewLimiter(rate.Limit(opts.Rate), 1)
	// Long enough for a full batch at the rate, so held messages do not
	// come back to the DLQ while they wait for their token.
	visibility := 10*time.Second + time.Duration(float64(2*10*time.Second)/opts.Rate)
	prog := &progress{t: t, total: res.Planned, start: res.Started}
	unplaced := map[string]string{} // message id -> receipt handle, released at the end
	kept := map[string]string{}     // expired, not re-admitted: released at the end
	skipped := map[string]string{}  // not selected: released at the end
	done := map[string]bool{}
	defer func() {
		res.Unplaced, res.Expired, res.Unselected = len(unplaced), len(kept), len(skipped)
		t.release(ctx, target.DLQ.URL, unplaced)
		t.release(ctx, target.DLQ.URL, kept)
		t.release(ctx, target.DLQ.URL, skipped)
	}()
	idle, waited := 0, false
	for opts.Max == 0 || res.Moved < opts.Max {
		if ctx.Err() != nil {
			return fmt.Errorf("%w after %d messages", ErrInterrupted, res.Moved)
		}
		want := 10
		if opts.Max > 0 {
			want = min(want, opts.Max-res.Moved)
		}
		got, err := t.SQS.ReceiveMessage(ctx, allAttributes(&sqs.ReceiveMessageInput{QueueUrl: &target.DLQ.URL, MaxNumberOfMessages: int32(want),
			VisibilityTimeout: int32(math.Ceil(visibility.Seconds())), WaitTimeSeconds: 1}))
		var msgs []types.Message
		if got != nil {
			msgs = got.Messages
		}
		if ctx.Err() != nil {
			t.releaseAll(ctx, target.DLQ.URL, msgs)
			return fmt.Errorf("%w after %d messages", ErrInterrupted, res.Moved)
		}
		if err != nil {
			return fmt.Errorf("receive from %s: %w", target.DLQ.Name, sqsError("ReceiveMessage", err))
		}
		fresh := 0
		for i, m := range msgs {
			if done[aws.ToString(m.MessageId)] {
				// Sent earlier; its delete failed. Delete again, do not resend.
				_, _ = t.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &target.DLQ.URL, ReceiptHandle: m.ReceiptHandle})
				continue
			}
			if h := held(aws.ToString(m.MessageId), unplaced, kept, skipped); h != nil {
				h[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle) // its latest handle, to release
				continue
			}
			fresh++
			if ok, _ := sel.selected(aws.ToString(m.MessageId)); !ok {
				skipped[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
				continue
			}
			expiry.Now = t.Clock.Now()
			_, old := classify.Expiry(m, expiry)
			if old && !opts.ReadmitExpired {
				kept[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
				continue
			}
			dest, err := dests.urlFor(ctx, m)
			if err != nil {
				fmt.Fprintf(t.log(), "message %s stays in the DLQ: %v\n", aws.ToString(m.MessageId), err)
				unplaced[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
				continue
			}
			r := lim.ReserveN(t.Clock.Now(), 1)
			if err := t.Clock.Sleep(ctx, r.DelayFrom(t.Clock.Now())); err != nil {
				r.Cancel()
				t.releaseAll(ctx, target.DLQ.URL, msgs[i:])
				return fmt.Errorf("%w after %d messages", ErrInterrupted, res.Moved)
			}
			if err := t.moveOne(ctx, target, m, dest, old); err != nil {
				t.releaseAll(ctx, target.DLQ.URL, msgs[i:])
				return err
			}
			done[aws.ToString(m.MessageId)] = true
			if old {
				res.Readmitted++
			}
			res.Moved++
			res.Destinations[dest.Name]++
			prog.show(res.Moved)
		}
		if fresh > 0 {
			idle = 0
			continue
		}
		if idle++; idle < 2 {
			continue
		}
		// Nothing new twice: done, unless messages are in flight in the DLQ
		// (another receiver, or a receive whose answer was lost on the way
		// and retried by the SDK). Wait for them once.
		attrs, err := t.queueAttributes(ctx, target.DLQ.URL, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
		n := 0
		if err == nil {
			n = atoi(attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]) - len(unplaced) - len(kept) - len(skipped)
		}
		if n <= 0 {
			break
		}
		if waited {
			fmt.Fprintf(t.log(), "%d messages are still in flight in %s (held by another receiver?): run redrive again later\n", n, target.DLQ.Name)
			break
		}
		fmt.Fprintf(t.log(), "%d messages are in flight in %s (another receiver, or a receive whose answer was lost); waiting %s for them\n", n, target.DLQ.Name, (visibility + time.Second).Round(time.Second))
		if err := t.Clock.Sleep(ctx, visibility+time.Second); err != nil {
			return fmt.Errorf("%w after %d messages", ErrInterrupted, res.Moved)
		}
		waited, idle = true, 0
	}
	prog.show(res.Moved)
	return nil
}

// moveOne sends m to dest, then deletes it from the DLQ. Both steps run to
// completion even if ctx is cancelled (a stop never separates them). If the
// send fails nothing happened; if the delete fails the message comes back
// to the DLQ and a later run delivers a duplicate. readmit sends it with
// the re-admission mark of now.
func (t *Tool) moveOne(ctx context.Context, target *Target, m types.Message, dest QueueRef, readmit bool) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepTimeout)
	defer cancel()
	attrs, err := sqsbatch.OriginalAttributes(m.MessageAttributes)
	if err != nil {
		fmt.Fprintf(t.log(), "warning: message %s: %v; sending its attributes unchanged\n", aws.ToString(m.MessageId), err)
		attrs = m.MessageAttributes
	}
	if readmit {
		attrs = maps.Clone(attrs)
		if attrs == nil {
			attrs = map[string]types.MessageAttributeValue{}
		}
		attrs[lambdaapi.AttrReadmision] = sqsbatch.StringAttribute(t.Clock.Now().UTC().Format(time.RFC3339))
		if len(attrs) > 10 {
			return fmt.Errorf("message %s has %d attributes with the re-admission mark, more than SQS's 10: it stays in the DLQ", aws.ToString(m.MessageId), len(attrs))
		}
	}
	in := &sqs.SendMessageInput{QueueUrl: &dest.URL, MessageBody: m.Body, MessageAttributes: attrs}
	if strings.HasSuffix(dest.Name, ".fifo") {
		in.MessageGroupId = aws.String(cmp.Or(m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], aws.ToString(m.MessageId)))
		// Stable per DLQ message: a re-run within SQS's 5-minute window
		// after a kill between send and delete is deduplicated.
		sum := sha256.Sum256([]byte("mf-dlq\x00" + aws.ToString(m.MessageId)))
		in.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
	}
	if _, err := t.SQS.SendMessage(dctx, in); err != nil {
		return fmt.Errorf("send message %s to %s (it stays in the DLQ): %w", aws.ToString(m.MessageId), dest.Name, sqsError("SendMessage", err))
	}
	if _, err := t.SQS.DeleteMessage(dctx, &sqs.DeleteMessageInput{QueueUrl: &target.DLQ.URL, ReceiptHandle: m.ReceiptHandle}); err != nil {
		fmt.Fprintf(t.log(), "warning: message %s was sent to %s but not deleted from the DLQ (%v): it will come back; a later redrive sends a duplicate, which its idempotent consumer absorbs\n", aws.ToString(m.MessageId), dest.Name, err)
	}
	return nil
}

// held is the map of handles among hs that holds id, nil when none does.
func held(id string, hs ...map[string]string) map[string]string {
	for _, h := range hs {
		if _, ok := h[id]; ok {
			return h
		}
	}
	return nil
}

func (t *Tool) releaseAll(ctx context.Context, url string, msgs []types.Message) {
	h := make(map[string]string, len(msgs))
	for _, m := range msgs {
		h[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
	}
	t.release(ctx, url, h)
}

// destinations resolves where a DLQ message goes back to: the queue SQS
// recorded (DeadLetterQueueSourceArn), else --to, else the DLQ's only
// source queue.
type destinations struct {
	t      *Tool
	target *Target
	to     *QueueRef
	byName map[string]QueueRef
}

func newDestinations(t *Tool, target *Target, to *QueueRef) *destinations {
	d := &destinations{t: t, target: target, to: to, byName: map[string]QueueRef{}}
	for _, s := range target.Sources {
		d.byName[s.Name] = s
	}
	return d
}

var errNoDestination = errors.New("no destination")

func (d *destinations) nameFor(m types.Message) (string, error) {
	if d.to != nil {
		return d.to.Name, nil
	}
	if arn := m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; arn != "" {
		return queueName(arn)
	}
	if len(d.target.Sources) == 1 {
		return d.target.Sources[0].Name, nil
	}
	return "", fmt.Errorf("%w: sent to the DLQ by a consumer, and %d queues dead-letter into %s", errNoDestination, len(d.target.Sources), d.target.DLQ.Name)
}

func (d *destinations) urlFor(ctx context.Context, m types.Message) (QueueRef, error) {
	name, err := d.nameFor(m)
	if err != nil {
		return QueueRef{}, err
	}
	if d.to != nil {
		return *d.to, nil
	}
	if r, ok := d.byName[name]; ok {
		return r, nil
	}
	url, err := d.t.queueURL(ctx, name)
	if err != nil {
		return QueueRef{}, fmt.Errorf("source queue %s: %w", name, err)
	}
	r := QueueRef{Name: name, URL: url}
	d.byName[name] = r
	return r, nil
}

// progress prints "moved n/N (p%) · r msg/s · ETA d" at most once per
// interval of the tool's clock.
type progress struct {
	t     *Tool
	total int
	start time.Time
	last  time.Time
}

func (p *progress) show(moved int) {
	now := p.t.Clock.Now()
	if now.Sub(p.last) < time.Second && moved < p.total {
		return
	}
	p.last = now
	elapsed := now.Sub(p.start)
	r := perSecond(moved, elapsed)
	line := fmt.Sprintf("moved %d/%d", moved, p.total)
	if p.total > 0 {
		line += fmt.Sprintf(" (%d%%)", moved*100/p.total)
	}
	line += fmt.Sprintf(" · %.1f msg/s", r)
	if left := p.total - moved; left > 0 && r > 0 {
		line += " · ETA " + eta(left, r)
	}
	fmt.Fprintln(p.t.log(), line)
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func eta(n int, perSec float64) string {
	return (time.Duration(float64(n) / perSec * float64(time.Second))).Round(time.Second).String()
}
