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
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// Redrive's default and highest rates, and the most messages it surveys.
const (
	DefaultRate = 10
	MaxRate     = 500
	surveyMax   = 1000
)

// RedriveOptions configures Redrive.
type RedriveOptions struct {
	// ConfirmFixed is the operator's word that the cause is fixed (runbook
	// step 4); required unless DryRun, which prints the plan and moves nothing.
	ConfirmFixed, DryRun bool
	// ReadmitExpired also moves the messages older than their consumer's
	// replay window, marked re-admitted (lambdaapi.AttrReadmision): the
	// operator's word that, for each, the side effect did not happen.
	ReadmitExpired bool
	// Rate in messages per second, in (0, MaxRate]; 0 means DefaultRate.
	Rate float64
	// Max moves at most this many messages; 0 means all.
	Max int
	// To sends every message to this queue (name or URL) instead of its source.
	To string
	// Only, Reason and Version select the messages to move: by verdict, by
	// a text in the consumer's reason or classify's finding, by version.
	Only            []Verdict
	Reason, Version string
}

func (o RedriveOptions) selects(m Message) bool {
	return (len(o.Only) == 0 || slices.Contains(o.Only, m.Class)) && (o.Reason == "" || strings.Contains(m.Reason, o.Reason) || strings.Contains(m.Why, o.Reason)) &&
		(o.Version == "" || m.Version == o.Version)
}

// RedriveResult is what Redrive did.
type RedriveResult struct {
	Surveyed     int            `json:"surveyed"`     // messages in the DLQ when it started (surveyed)
	Planned      int            `json:"planned"`      // of them, selected to move
	ByVerdict    map[string]int `json:"by_verdict"`   // selected, by verdict
	Left         map[string]int `json:"left"`         // not selected, by verdict: they stay
	Moved        int            `json:"moved"`        // sent to a destination and deleted from the DLQ
	Destinations map[string]int `json:"destinations"` // queue name -> messages moved there
	Unplaced     int            `json:"unplaced"`     // left in the DLQ for want of a destination
	Expired      int            `json:"expired_left"` // left in the DLQ: older than the replay window
	Readmitted   int            `json:"readmitted"`   // expired ones moved with the re-admission mark
	Unselected   int            `json:"unselected"`   // left in the DLQ by the selection
	Started      time.Time      `json:"started"`
	Elapsed      time.Duration  `json:"elapsed_ns"`
	DryRun       bool           `json:"dry_run"`
	Next         string         `json:"next,omitempty"` // the verify command to run next
}

// Redrive (runbook step 5) surveys and classifies the DLQ, prints the plan,
// refuses poison or data not named in Only, then receives, waits for a
// token, sends each selected message back and only then deletes it.
func (t *Tool) Redrive(ctx context.Context, tg *Target, opts RedriveOptions) (RedriveResult, error) {
	res := RedriveResult{Destinations: map[string]int{}, ByVerdict: map[string]int{}, Left: map[string]int{}}
	opts.Rate = cmp.Or(opts.Rate, DefaultRate)
	switch tk, err := t.moveTask(ctx, tg.DLQ); {
	case !opts.ConfirmFixed && !opts.DryRun:
		return res, fmt.Errorf("%w: the cause is not confirmed fixed: fix it first (runbook step 4, docs/runbooks/dlq.md), then re-run with --confirm-fixed; --dry-run shows the plan", ErrRefused)
	case !(opts.Rate > 0 && opts.Rate <= MaxRate):
		return res, fmt.Errorf("%w: --rate %v: want messages per second in (0, %d]", ErrUsage, opts.Rate, MaxRate)
	case err != nil && errors.Is(err, errPermission):
		fmt.Fprintf(t.log(), "warning: cannot check for a running move task: %v\n", err)
	case err != nil:
		return res, fmt.Errorf("list the move tasks of %s: %w", tg.DLQ.Name, err)
	case tk != nil && (aws.ToString(tk.Status) == "RUNNING" || aws.ToString(tk.Status) == "CANCELLING"):
		return res, fmt.Errorf("%w: a message move task is %s on %s (moved %d): wait for it (mf-dlq verify), or cancel it: aws sqs cancel-message-move-task --task-handle %s",
			ErrRefused, aws.ToString(tk.Status), tg.DLQ.Name, tk.ApproximateNumberOfMessagesMoved, aws.ToString(tk.TaskHandle))
	}
	dests := map[string]QueueRef{}
	for _, s := range tg.Sources {
		dests[s.Name] = s
	}
	var to *QueueRef
	if opts.To != "" {
		url, err := opts.To, error(nil)
		if !strings.Contains(url, "://") {
			if url, err = t.queueURL(ctx, opts.To); err != nil {
				return res, fmt.Errorf("destination --to %s: %w", opts.To, err)
			}
		}
		r, err := t.ref(ctx, url)
		if err != nil {
			return res, err
		}
		to, dests[r.Name] = &r, r
	} else if len(tg.Sources) == 0 {
		return res, fmt.Errorf("%w: no queue names %s as its DLQ: pass --to QUEUE, or re-publish from the SNS subscription or EventBridge target it serves", ErrRefused, tg.DLQ.Name)
	}
	// destination is where m goes back to: --to, else the queue SQS
	// recorded, else the DLQ's only source.
	destination := func(m types.Message) (string, error) {
		if to != nil {
			return to.Name, nil
		} else if src := m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)]; src != "" {
			return queueName(src)
		} else if len(tg.Sources) == 1 {
			return tg.Sources[0].Name, nil
		}
		return "", fmt.Errorf("sent to the DLQ by a consumer, and %d queues dead-letter into %s", len(tg.Sources), tg.DLQ.Name)
	}

	// The survey: how many, of which verdict, to where, how old.
	msgs, err := t.peek(ctx, tg.DLQ, surveyMax)
	if err != nil {
		return res, err
	} else if len(msgs) == 0 {
		return res, t.emptyError(ctx, tg.DLQ)
	}
	expiry := ConsumerOptions(tg)
	expiry.Now = t.Clock.Now()
	survey := map[string]Message{}
	plan := map[string]int{}
	expired := 0
	for i, m := range Classify(msgs, expiry).Messages {
		survey[m.MessageID] = m
		if !opts.selects(m) {
			res.Left[string(m.Class)]++
			continue
		}
		res.ByVerdict[string(m.Class)]++
		res.Planned++
		if _, old := expiry.expired(msgs[i]); old {
			expired++
		}
		if name, err := destination(msgs[i]); err != nil {
			plan["(no destination: "+err.Error()+")"]++
		} else {
			plan[name]++
		}
	}
	res.Surveyed = len(msgs)
	w := t.out()
	fmt.Fprintf(w, "plan: move %d of the %d messages in %s at %s msg/s (about %s) using receive → send → delete (send first: a stop at any moment leaves at worst a duplicate)\n",
		res.Planned, len(msgs), tg.DLQ.Name, strconv.FormatFloat(opts.Rate, 'f', -1, 64), eta(res.Planned, opts.Rate))
	if len(msgs) == surveyMax {
		fmt.Fprintf(w, "  (surveyed the first %d messages; the DLQ may hold more)\n", surveyMax)
	}
	fmt.Fprintf(w, "  by verdict: %s\n", describe(res.ByVerdict, " (move)", res.Left, " (stay)"))
	for _, name := range slices.Sorted(maps.Keys(plan)) {
		fmt.Fprintf(w, "  → %s: %d\n", name, plan[name])
	}
	t.warnExpired(tg, expired, res.Planned, opts.ReadmitExpired)
	t.warnUnknown(msgs, plan)
	refusal := ""
	if named, why := []string(nil), []string(nil); len(opts.Only) == 0 && res.ByVerdict[string(Poison)]+res.ByVerdict[string(Data)] > 0 {
		if n := res.ByVerdict[string(Poison)]; n > 0 {
			named, why = append(named, fmt.Sprintf("%d poison", n)), append(why, "a redrive does not make poison valid (deploy a consumer that accepts it first)")
		}
		if n := res.ByVerdict[string(Data)]; n > 0 {
			named, why = append(named, fmt.Sprintf("%d data", n)), append(why, "data messages fail again until the data is fixed")
		}
		var all []string
		for _, v := range verdictOrder {
			if res.ByVerdict[string(v)] > 0 {
				all = append(all, string(v))
			}
		}
		refusal = fmt.Sprintf("the messages to move include %s (mf-dlq classify): %s. Redrive one group at a time (--only transient), or name the groups to move (--only %s)",
			strings.Join(named, " and "), strings.Join(why, "; "), strings.Join(all, ","))
	}
	switch {
	case opts.DryRun:
		res.DryRun = true
		if refusal != "" {
			fmt.Fprintf(w, "as planned it would be refused: %s\n", refusal)
		}
		fmt.Fprintf(w, "dry run: nothing moved\n")
		return res, nil
	case refusal != "":
		return res, fmt.Errorf("%w: %s", ErrRefused, refusal)
	case res.Planned == 0:
		return res, fmt.Errorf("%w: the selection matches none of the %d messages (by verdict: %s)", ErrRefused, len(msgs), describe(nil, "", res.Left, ""))
	case expired == res.Planned && len(msgs) < surveyMax && !opts.ReadmitExpired:
		res.Expired = expired
		return res, fmt.Errorf("%w: all %d messages are older than their consumer's replay window; nothing to redrive (see docs/runbooks/dlq.md#expired-messages)", ErrRefused, expired)
	}

	// The move: receive, wait for a token, send, delete.
	res.Started = t.Clock.Now()
	lim := rate.NewLimiter(rate.Limit(opts.Rate), 1)
	// Long enough for a full batch at the rate, so that held messages do
	// not come back to the DLQ while they wait for their token.
	visibility := 10*time.Second + time.Duration(float64(20*time.Second)/opts.Rate)
	handles := map[string]string{} // message id -> receipt handle of what the tool holds, released at the end
	status := map[string]string{}  // message id -> moved, or why it stays: unselected, expired, unplaced
	shown := res.Started
	err = func() error {
		defer t.release(ctx, tg.DLQ.URL, handles)
		for idle, waited := 0, false; (opts.Max == 0 || res.Moved < opts.Max) && idle < 2; {
			want := 10
			if opts.Max > 0 {
				want = min(want, opts.Max-res.Moved)
			}
			got, err := t.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &tg.DLQ.URL, MaxNumberOfMessages: int32(want),
				VisibilityTimeout: int32(math.Ceil(visibility.Seconds())), WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
			if got == nil {
				got = &sqs.ReceiveMessageOutput{}
			}
			idle++
			for _, m := range got.Messages {
				id := aws.ToString(m.MessageId)
				if status[id] == "moved" { // sent earlier, its delete failed: delete again, do not resend
					_, _ = t.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &tg.DLQ.URL, ReceiptHandle: m.ReceiptHandle})
					continue
				} else if status[id] == "" {
					idle = 0
				}
				handles[id] = aws.ToString(m.ReceiptHandle) // its latest handle, to release
			}
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted after %d messages: %w", res.Moved, ctx.Err())
			} else if err != nil {
				return fmt.Errorf("receive from %s: %w", tg.DLQ.Name, awsError("sqs:ReceiveMessage", err))
			}
			for _, m := range got.Messages {
				id := aws.ToString(m.MessageId)
				if status[id] != "" {
					continue
				}
				expiry.Now = t.Clock.Now()
				_, old := expiry.expired(m)
				sm, surveyed := survey[id]
				name, err := destination(m)
				switch {
				case surveyed && !opts.selects(sm), !surveyed && (len(opts.Only) > 0 || opts.Reason != "" || opts.Version != ""):
					status[id] = "unselected"
				case old && !opts.ReadmitExpired:
					status[id] = "expired"
				case err != nil:
					fmt.Fprintf(t.log(), "message %s stays in the DLQ: no destination: %v\n", id, err)
					status[id] = "unplaced"
				}
				if status[id] != "" {
					continue
				}
				dest, ok := dests[name]
				if !ok {
					url, err := t.queueURL(ctx, name)
					if err != nil {
						return fmt.Errorf("source queue %s of message %s: %w", name, id, err)
					}
					dest = QueueRef{Name: name, URL: url}
					dests[name] = dest
				}
				r := lim.ReserveN(t.Clock.Now(), 1)
				if err := t.Clock.Sleep(ctx, r.DelayFrom(t.Clock.Now())); err != nil {
					return fmt.Errorf("interrupted after %d messages: %w", res.Moved, err)
				} else if err := t.moveOne(ctx, tg, m, dest, old); err != nil {
					return err
				}
				status[id] = "moved"
				delete(handles, id)
				res.Moved++
				res.Destinations[dest.Name]++
				if old {
					res.Readmitted++
				}
				if now := t.Clock.Now(); now.Sub(shown) >= time.Second || res.Moved == res.Planned {
					shown = now
					r := float64(res.Moved) / max(now.Sub(res.Started).Seconds(), 1e-9)
					fmt.Fprintf(t.log(), "moved %d/%d (%d%%) · %.1f msg/s · ETA %s\n", res.Moved, res.Planned, res.Moved*100/max(res.Planned, 1), r, eta(max(res.Planned-res.Moved, 0), r))
				}
			}
			// Nothing new twice: done, unless messages are in flight (another
			// receiver, or a receive whose answer was lost): wait once.
			if idle < 2 || waited {
				continue
			} else if _, inflight, _, err := t.depth(ctx, tg.DLQ.URL); err == nil && inflight > len(handles) {
				fmt.Fprintf(t.log(), "%d messages are in flight in %s (another receiver, or a receive whose answer was lost); waiting %s for them\n", inflight-len(handles), tg.DLQ.Name, (visibility + time.Second).Round(time.Second))
				if err := t.Clock.Sleep(ctx, visibility+time.Second); err != nil {
					return fmt.Errorf("interrupted after %d messages: %w", res.Moved, err)
				}
				waited, idle = true, 0
			}
		}
		return nil
	}()
	for _, s := range status {
		switch s {
		case "unselected":
			res.Unselected++
		case "expired":
			res.Expired++
		case "unplaced":
			res.Unplaced++
		}
	}
	res.Elapsed = t.Clock.Now().Sub(res.Started)
	fmt.Fprintf(w, "moved %d of %d in %s (%.1f msg/s)", res.Moved, res.Planned, res.Elapsed.Round(time.Second), float64(res.Moved)/max(res.Elapsed.Seconds(), 1e-9))
	for _, name := range slices.Sorted(maps.Keys(res.Destinations)) {
		fmt.Fprintf(w, "; %s: %d", name, res.Destinations[name])
	}
	fmt.Fprintln(w)
	if res.Unplaced > 0 {
		fmt.Fprintf(w, "%d messages stay in %s: no destination known (pass --to QUEUE)\n", res.Unplaced, tg.DLQ.Name)
	}
	if res.Unselected > 0 {
		fmt.Fprintf(w, "%d messages stay in %s: not selected (%s)\n", res.Unselected, tg.DLQ.Name, cmp.Or(describe(nil, "", res.Left, ""), "not in the survey: run redrive again"))
	}
	if res.Readmitted > 0 {
		fmt.Fprintf(w, "%d of them were older than their consumer's replay window and went back re-admitted (%s)\n", res.Readmitted, lambdaapi.AttrReadmision)
	}
	if res.Expired > 0 {
		fmt.Fprintf(w, "%d messages stay in %s: older than their consumer's replay window (mf-dlq classify shows them as expired; docs/runbooks/dlq.md#expired-messages)\n", res.Expired, tg.DLQ.Name)
		err = cmp.Or(err, fmt.Errorf("%w: %d messages older than the consumer's replay window stay in the DLQ", ErrRefused, res.Expired))
	}
	if err == nil || errors.Is(err, context.Canceled) {
		res.Next = t.Command("verify", tg.DLQ.Name, "--expect", strconv.Itoa(res.Moved), "--since", res.Started.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "next: %s\n", res.Next)
	}
	return res, err
}

// moveOne sends m to dest, then deletes it from the DLQ, both to
// completion even after Ctrl-C: a kill leaves at worst a duplicate.
func (t *Tool) moveOne(ctx context.Context, tg *Target, m types.Message, dest QueueRef, readmit bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	id := aws.ToString(m.MessageId)
	attrs, err := sqsbatch.OriginalAttributes(m.MessageAttributes)
	if err != nil {
		fmt.Fprintf(t.log(), "warning: message %s: %v; sending its attributes unchanged\n", id, err)
		attrs = maps.Clone(m.MessageAttributes)
	}
	if readmit {
		if attrs == nil {
			attrs = map[string]types.MessageAttributeValue{}
		}
		if attrs[lambdaapi.AttrReadmision] = sqsbatch.StringAttribute(t.Clock.Now().UTC().Format(time.RFC3339)); len(attrs) > 10 {
			return fmt.Errorf("message %s has %d attributes with the re-admission mark, more than SQS's 10: it stays in the DLQ", id, len(attrs))
		}
	}
	in := &sqs.SendMessageInput{QueueUrl: &dest.URL, MessageBody: m.Body, MessageAttributes: attrs}
	if strings.HasSuffix(dest.Name, ".fifo") {
		// Stable per DLQ message: a re-run within SQS's 5-minute window
		// after a kill between send and delete is deduplicated.
		sum := sha256.Sum256([]byte("mf-dlq\x00" + id))
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(cmp.Or(m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)], id)), aws.String(hex.EncodeToString(sum[:]))
	}
	if _, err := t.SQS.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("send message %s to %s (it stays in the DLQ): %w", id, dest.Name, awsError("sqs:SendMessage", err))
	}
	if _, err := t.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &tg.DLQ.URL, ReceiptHandle: m.ReceiptHandle}); err != nil {
		fmt.Fprintf(t.log(), "warning: message %s was sent to %s but not deleted from the DLQ (%v): it will come back; a later redrive sends a duplicate, which its idempotent consumer absorbs\n", id, dest.Name, err)
	}
	return nil
}

// warnExpired says what happens to the messages older than their
// consumer's replay window.
func (t *Tool) warnExpired(tg *Target, expired, total int, readmit bool) {
	who := "its consumer"
	if c, ok := tg.Consumer(); ok {
		who = fmt.Sprintf("%s (%s, a %s window)", c.Function, c.IdempotencyKey, sqsbatch.Days(c.Window))
	}
	switch {
	case expired == 0 && readmit:
		fmt.Fprintf(t.log(), "note: --readmit-expired: no surveyed message is older than its consumer's replay window\n")
	case expired > 0 && readmit:
		fmt.Fprintf(t.log(), "WARNING: re-admitting %d of %d messages older than the replay window of %s: they go back with %s and the consumer runs them although their records may be gone. "+
			"You state that, for each, the side effect did not happen (docs/runbooks/dlq.md#expired-messages).\n", expired, total, who, lambdaapi.AttrReadmision)
	case expired > 0:
		fmt.Fprintf(t.log(), "WARNING: %d of %d messages are older than the replay window of %s: their idempotency records may be gone, so a duplicate would run its side effect again, and the consumer refuses them. "+
			"They stay in the DLQ. Check each order (docs/runbooks/dlq.md#expired-messages); re-admit the ones whose side effect did not happen with --readmit-expired.\n", expired, total, who)
	}
}

// warnUnknown warns about messages first seen over a day ago going to
// queues whose consumers' replay window config/catalog does not know.
func (t *Tool) warnUnknown(msgs []types.Message, plan map[string]int) {
	var who []string
	for _, name := range slices.Sorted(maps.Keys(plan)) {
		if q, _, isDLQ, ok := catalog.FindPhysical(name); !ok || isDLQ || q.Function == "" {
			who = append(who, name)
		}
	}
	old := 0
	for _, m := range msgs {
		// First seen: the first receive SQS's redrive kept, else when sent.
		first := stamp(m, types.MessageSystemAttributeNameSentTimestamp)
		if m.Attributes[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)] != "" {
			first = cmp.Or(stamp(m, types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp), first)
		}
		if !first.IsZero() && t.Clock.Now().Sub(first) > idempotency.DefaultExpiry {
			old++
		}
	}
	if len(who) > 0 && old > 0 {
		fmt.Fprintf(t.log(), "WARNING: %d of %d messages were first received more than %s ago, and config/catalog does not know the replay window of the consumers of %s: "+
			"if their records have expired, a message that had in fact completed runs again. Check those orders before redriving.\n", old, len(msgs), idempotency.DefaultExpiry, strings.Join(who, ", "))
	}
}

// verdictOrder is the order the runbook names the verdicts in.
var verdictOrder = []Verdict{Transient, Data, Poison, Expired}

// describe lists counts per verdict in the runbook's order, each followed
// by its suffix: "80 transient (move), 30 data (stay)".
func describe(a map[string]int, sa string, b map[string]int, sb string) string {
	var parts []string
	for _, v := range verdictOrder {
		if n := a[string(v)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s%s", n, v, sa))
		}
		if n := b[string(v)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s%s", n, v, sb))
		}
	}
	return strings.Join(parts, ", ")
}

func eta(n int, perSec float64) string {
	return time.Duration(float64(n) / perSec * float64(time.Second)).Round(time.Second).String()
}
