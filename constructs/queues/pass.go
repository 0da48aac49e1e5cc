package queues

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
)

// Pass is the longest legitimate time between an event's creation and the
// last moment a consumer of the queue may process a message of it: the
// span its idempotency records (or whatever recognises its duplicates) must
// cover. Longer paths exist only by repeated operator action (a second
// redrive, a re-publication); the consumer refuses those as expired
// (sqsbatch.Window). docs/design.md#replay-windows explains each part.
type Pass struct {
	// Upstream is how old a message can be when it reaches the queue (SNS
	// delivery retries, a rule's maximum event age, an archive's retention).
	Upstream time.Duration
	// FirstStay is the first residency: for a standard queue the DLQ's
	// retention, counted from the enqueue into the source (SQS keeps that
	// timestamp when it moves a message to the DLQ), so it covers the time
	// in the source; for FIFO the source's retention plus the DLQ's (the
	// move resets the timestamp).
	FirstStay time.Duration
	// Redrive is the source's retention once more: a redrive (move task or
	// receive → send → delete) makes a new message with a new enqueue time.
	Redrive time.Duration
	// Deferrals is what deferral copies add (a copy is a new message too),
	// once in the first residency and once after the redrive.
	Deferrals time.Duration
	// queue names the queue for messages.
	queue string
	fifo  bool
}

// Total is the pass's length.
func (p Pass) Total() time.Duration { return p.Upstream + p.FirstStay + p.Redrive + p.Deferrals }

// String lists the parts and the total, in days.
func (p Pass) String() string {
	parts := []string{}
	if p.Upstream > 0 {
		parts = append(parts, days(p.Upstream)+" before reaching the queue")
	}
	stay := " in the DLQ (counted from the enqueue into the source, it covers the time there)"
	if p.fifo {
		stay = " in the source and then the DLQ (FIFO: the move resets the enqueue time)"
	}
	parts = append(parts, days(p.FirstStay)+stay, days(p.Redrive)+" in the source after one redrive (a redrive resets the enqueue time)")
	if p.Deferrals > 0 {
		parts = append(parts, days(p.Deferrals)+" of deferral copies while a circuit is open (two residencies)")
	}
	return fmt.Sprintf("%s: %s = %s", p.queue, strings.Join(parts, " + "), days(p.Total()))
}

// Covers returns nil when window covers the pass, else an error naming the
// numbers (for the caller's annotation).
func (p Pass) Covers(window time.Duration) error {
	if window >= p.Total() {
		return nil
	}
	return fmt.Errorf("the replay window (%s) does not cover the longest legitimate pass of %s: lengthen the window or shorten the retentions (docs/design.md#replay-windows)",
		days(window), p)
}

// LongestPass computes the queue's Pass from its synthesised retentions
// (MessageRetentionPeriod of the source and of the DLQ), for messages that
// are already upstream old when they arrive and, while a consumer's
// dependency is down, deferred by copies for up to deferral per residency.
func (q *Queue) LongestPass(upstream, deferral time.Duration) Pass {
	src := retention(q.Queue)
	dlq := retention(q.DeadLetterQueue)
	first := max(src, dlq)
	if q.Fifo {
		first = src + dlq
	}
	return Pass{Upstream: upstream, FirstStay: first, Redrive: src, Deferrals: 2 * deferral, queue: q.QueueName, fifo: q.Fifo}
}

// retention is the queue's MessageRetentionPeriod as synthesised (SQS's
// default of 4 days when unset).
func retention(q awssqs.Queue) time.Duration {
	if q == nil {
		return 0
	}
	if s := q.Node().DefaultChild().(awssqs.CfnQueue).MessageRetentionPeriod(); s != nil {
		return time.Duration(*s) * time.Second
	}
	return DefaultRetentionDays * 24 * time.Hour
}

// days prints a duration in days ("14 days", "43.5 days"; hours below a day).
func days(d time.Duration) string {
	round := func(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }
	if d < 24*time.Hour {
		return round(d.Hours()) + " h"
	}
	return round(d.Hours()/24) + " days"
}
