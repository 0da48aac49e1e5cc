package dlq

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ContainOptions configures Contain.
type ContainOptions struct {
	// Window is how long the DLQ depth is sampled. Default 30 s.
	Window time.Duration
	// Samples is how many times (>= 2). Default 4.
	Samples int
	// Disable or Enable toggles the source queues' event source mappings.
	Disable, Enable bool
}

// ContainResult is what Contain measured.
type ContainResult struct {
	// DLQDepth are the sampled visible+in-flight counts of the DLQ.
	DLQDepth []int `json:"dlq_depth"`
	// Growing reports a rising DLQ depth over the window.
	Growing bool `json:"growing"`
	// Consumers are the sources' event source mappings, as left (after a
	// --disable-consumer or --enable-consumer).
	Consumers []EventSourceMapping `json:"consumers"`
}

// Contain answers "is it still growing?": it samples the DLQ depth over a
// window, reports each source queue's depth and the age of its oldest
// message (CloudWatch), lists the consumers' event source mappings and,
// when asked, disables or enables them, saying what that means for
// retention.
func (t *Tool) Contain(ctx context.Context, target *Target, opts ContainOptions) (ContainResult, error) {
	if opts.Window <= 0 {
		opts.Window = 30 * time.Second
	}
	if opts.Samples < 2 {
		opts.Samples = 4
	}
	if opts.Disable && opts.Enable {
		return ContainResult{}, fmt.Errorf("%w: --disable-consumer and --enable-consumer together", ErrUsage)
	}
	var res ContainResult
	w := t.out()
	start := t.Clock.Now()
	step := opts.Window / time.Duration(opts.Samples-1)
	for i := range opts.Samples {
		if i > 0 {
			if err := t.Clock.Sleep(ctx, step); err != nil {
				return res, err
			}
		}
		attrs, err := t.queueAttributes(ctx, target.DLQ.URL, types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
		if err != nil {
			return res, fmt.Errorf("sample %s: %w", target.DLQ.Name, err)
		}
		n := atoi(attrs[string(types.QueueAttributeNameApproximateNumberOfMessages)]) + atoi(attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
		res.DLQDepth = append(res.DLQDepth, n)
		fmt.Fprintf(t.log(), "  %s  %s: %d messages\n", t.Clock.Now().Sub(start).Round(time.Second), target.DLQ.Name, n)
	}
	first, last := res.DLQDepth[0], res.DLQDepth[len(res.DLQDepth)-1]
	res.Growing = last > first
	fmt.Fprintf(w, "DLQ %s: %d → %d messages over %s", target.DLQ.Name, first, last, opts.Window)
	if res.Growing {
		fmt.Fprintf(w, ": GROWING (+%d, %.1f/min). The failure is live: consider --disable-consumer.\n", last-first, float64(last-first)/opts.Window.Minutes())
	} else {
		fmt.Fprintf(w, ": not growing. Not live right now: classify calmly (mf-dlq classify).\n")
	}
	if len(target.Sources) == 0 {
		fmt.Fprintf(w, "No SQS queue dead-letters into %s (the DLQ of an SNS subscription or EventBridge target?): there is no consumer to disable here.\n", target.DLQ.Name)
		return res, nil
	}
	for _, s := range target.Sources {
		t.describeSource(ctx, s)
		ms, err := t.mappings(ctx, s, opts)
		res.Consumers = append(res.Consumers, ms...)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

func (t *Tool) describeSource(ctx context.Context, s QueueRef) {
	w := t.out()
	attrs, err := t.queueAttributes(ctx, s.URL)
	if err != nil {
		fmt.Fprintf(w, "source %s: cannot read attributes: %v\n", s.Name, err)
		return
	}
	fmt.Fprintf(w, "source %s: %s visible, %s in flight, %s delayed; retention %s, maxReceiveCount %d\n", s.Name,
		attrs[string(types.QueueAttributeNameApproximateNumberOfMessages)], attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)],
		attrs[string(types.QueueAttributeNameApproximateNumberOfMessagesDelayed)], seconds(attrs[string(types.QueueAttributeNameMessageRetentionPeriod)]), s.MaxReceiveCount())
	if t.Metrics == nil {
		fmt.Fprintf(w, "  age of oldest message: not available (no CloudWatch client)\n")
		return
	}
	age, at, ok, err := t.Metrics.OldestMessageAge(ctx, s.Name, 15*time.Minute)
	switch {
	case err != nil:
		fmt.Fprintf(w, "  age of oldest message: CloudWatch unavailable: %s\n", brief(err))
	case !ok:
		fmt.Fprintf(w, "  age of oldest message: no datapoint in the last 15 min (an idle queue publishes none)\n")
	default:
		fmt.Fprintf(w, "  age of oldest message: %s (ApproximateAgeOfOldestMessage at %s UTC)\n", age, at.UTC().Format("15:04"))
	}
}

func (t *Tool) mappings(ctx context.Context, s QueueRef, opts ContainOptions) (out []EventSourceMapping, _ error) {
	w := t.out()
	if t.Lambda == nil {
		fmt.Fprintf(w, "  consumers: not available (no Lambda client)\n")
		if opts.Disable || opts.Enable {
			return nil, fmt.Errorf("cannot toggle the consumer of %s without a Lambda client", s.Name)
		}
		return nil, nil
	}
	ms, err := t.Lambda.ListEventSourceMappings(ctx, s.ARN)
	if err != nil {
		if opts.Disable || opts.Enable {
			return nil, fmt.Errorf("list the event source mappings of %s: %w", s.Name, err)
		}
		fmt.Fprintf(w, "  consumers: Lambda API unavailable: %s\n", brief(err))
		return nil, nil
	}
	if len(ms) == 0 {
		fmt.Fprintf(w, "  consumers: no Lambda event source mapping reads %s\n", s.Name)
	}
	for _, m := range ms {
		fmt.Fprintf(w, "  consumer %s: mapping %s %s (batch %d, MaximumConcurrency %s)\n", m.FunctionARN, m.UUID, m.State, m.BatchSize, orDash(itoa0(m.MaximumConcurrency)))
		if !opts.Disable && !opts.Enable {
			out = append(out, m)
			continue
		}
		nm, err := t.Lambda.SetEventSourceMappingEnabled(ctx, m.UUID, opts.Enable)
		if err != nil {
			return out, fmt.Errorf("update event source mapping %s: %w", m.UUID, err)
		}
		out = append(out, nm)
		fmt.Fprintf(w, "  → mapping %s is now %s\n", nm.UUID, nm.State)
	}
	if opts.Disable && len(ms) > 0 {
		ret := seconds(s.Attrs[string(types.QueueAttributeNameMessageRetentionPeriod)])
		fmt.Fprintf(w, "  Consumption of %s is stopped: new messages wait there instead of burning receives into the DLQ. Messages already in flight finish or come back. "+
			"They wait at most the retention period (%s) from when they were SENT, then SQS deletes them silently (they never reach the DLQ): re-enable (--enable-consumer) well before the oldest reaches that age.\n", s.Name, ret)
	}
	if opts.Enable && len(ms) > 0 {
		fmt.Fprintf(w, "  Consumption of %s resumes; watch the DLQ (mf-dlq contain) for a few minutes.\n", s.Name)
	}
	return out, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func itoa0(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func seconds(s string) string {
	n, err := strconv.Atoi(s)
	if err != nil {
		return "?"
	}
	d := time.Duration(n) * time.Second
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}
