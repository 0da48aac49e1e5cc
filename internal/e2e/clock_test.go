package e2e

import (
	"context"
	"time"
)

// Clock is the run's simulated time for what the harness plays on AWS's
// behalf (SQS visibility and delays, Step Functions retry waits, EventBridge
// retry backoff, the customers' pauses): it runs Scale times faster than the
// wall clock, from the wall clock's time at the start. The Go code under
// test keeps the real clock; see the package doc for how the two meet.
type Clock struct {
	base  time.Time // simulated time at start
	start time.Time // wall clock at start (monotonic)
	scale float64
}

// NewClock returns a clock running scale times faster than the wall clock.
func NewClock(scale float64) *Clock {
	now := time.Now()
	return &Clock{base: now.UTC().Truncate(time.Millisecond), start: now, scale: scale}
}

// Now is the simulated time.
func (c *Clock) Now() time.Time {
	return c.base.Add(time.Duration(float64(time.Since(c.start)) * c.scale))
}

// Real converts a simulated duration into wall-clock time.
func (c *Clock) Real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.scale)
}

// Sleep waits the simulated duration d (d/Scale of wall-clock time) or
// until ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(c.Real(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
