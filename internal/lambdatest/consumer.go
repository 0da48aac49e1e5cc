package lambdatest

// Consumers: runs the project's queue consumers in tests the way
// Lambda's SQS event source mapping does: messages sent to an in-memory SQS
// (internal/localaws, with visibility timeouts, receive counts and redrive to a
// DLQ) are received in batches, handed to the consumer's Processor as a real
// events.SQSEvent, and deleted unless the response lists them in
// batchItemFailures. It also builds hand-made batches (duplicate message ids
// in one batch) and reads back what the consumers dead-lettered.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
	"github.com/redis/go-redis/v9"
)

// ConsumerVersion is the build id the test settings carry (it must appear
// in every dead-lettered message).
const ConsumerVersion = "sha256:test0000000"

// Start is when the queues' manual clock starts.
var Start = time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)

// ConfirmadoEn is a confirmado_en five minutes before Start, for bodies
// whose events are well inside every replay window.
const ConfirmadoEn = "2026-11-27T17:55:00Z"

// Queues is a source queue and its DLQ in one localaws.
type Queues struct {
	Fake  *localaws.SQS
	Clock *retry.VirtualClock
	// Source and DLQ are the queue URLs, SourceARN the event source ARN.
	Source, DLQ, SourceARN string
	MaxReceiveCount        int
	// Window is the consumers' replay window (Settings, IdempotencyStore).
	Window time.Duration
	seq    atomic.Int64
}

// QueueOptions configure NewQueues.
type QueueOptions struct {
	// Fifo makes both queues FIFO (name gets ".fifo").
	Fifo bool
	// MaxReceiveCount of the redrive policy (default 4).
	MaxReceiveCount int
	// Visibility of the source queue (default 400 s).
	Visibility time.Duration
	// Window is the replay window of the consumer (default 45 days, the
	// fan-out consumers').
	Window time.Duration
}

// NewQueues creates source queue name and its DLQ name+"-fallidos" on a fresh
// local SQS with a manual clock.
func NewQueues(t testing.TB, name string, o QueueOptions) *Queues {
	t.Helper()
	o.MaxReceiveCount = cmp.Or(o.MaxReceiveCount, 4)
	o.Visibility = cmp.Or(o.Visibility, 400*time.Second)
	o.Window = cmp.Or(o.Window, lambdaapi.WindowPreparacion)
	suffix := ""
	if o.Fifo {
		suffix = ".fifo"
	}
	clk := retry.NewVirtualClock(Start)
	f := localaws.NewSQS(localaws.SQSConfig{Now: clk.Now})
	dlq, err := f.CreateQueue(name+"-fallidos"+suffix, localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	src, err := f.CreateQueue(name+suffix, localaws.QueueConfig{
		VisibilityTimeout: o.Visibility,
		Redrive:           &localaws.RedrivePolicy{DeadLetterTargetARN: f.ARN(dlq), MaxReceiveCount: o.MaxReceiveCount},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Queues{Fake: f, Clock: clk, Source: src, DLQ: dlq, SourceARN: f.ARN(src), MaxReceiveCount: o.MaxReceiveCount, Window: o.Window}
}

// Settings are the consumer settings a function deployed on these queues
// would read: the DLQ route of the source, the test build id, the queue's
// maxReceiveCount, the replay window (on the queues' clock).
func (q *Queues) Settings() sqsconsumer.Settings {
	name := q.SourceARN[strings.LastIndex(q.SourceARN, ":")+1:]
	return sqsconsumer.Settings{
		Environment:       "test",
		DLQRoutes:         lambdaapi.DLQRoutes{name: q.DLQ},
		ConsumerVersion:   ConsumerVersion,
		Concurrency:       8,
		DeadlineMargin:    sqsbatch.DefaultDeadlineMargin,
		MaxReceiveCount:   q.MaxReceiveCount,
		IdempotencyWindow: q.Window,
		Now:               q.Clock.Now,
	}
}

// Send enqueues body (group is the FIFO MessageGroupId, ignored on
// standard queues; FIFO messages are deduplicated by a fresh id).
func (q *Queues) Send(t testing.TB, body, group string) string {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: &q.Source, MessageBody: &body}
	if strings.HasSuffix(q.Source, ".fifo") {
		in.MessageGroupId = &group
		in.MessageDeduplicationId = aws.String("d" + strconv.FormatInt(q.seq.Add(1), 10))
	}
	out, err := q.Fake.SendMessage(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return *out.MessageId
}

// SendReadmitted enqueues body as `mf-dlq redrive --readmit-expired` sends
// an expired message: with the re-admission mark (lambdaapi.AttrReadmision)
// of the queues' current time.
func (q *Queues) SendReadmitted(t testing.TB, body string) string {
	t.Helper()
	out, err := q.Fake.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q.Source, MessageBody: &body,
		MessageAttributes: map[string]types.MessageAttributeValue{lambdaapi.AttrReadmision: sqsbatch.StringAttribute(q.Clock.Now().UTC().Format(time.RFC3339))}})
	if err != nil {
		t.Fatal(err)
	}
	return *out.MessageId
}

// RequireExpired checks that the DLQ holds the message of id (its original
// message id) refused as older than the replay window: class permanent,
// reason lambdaapi.ReasonExpiredWindow.
func (q *Queues) RequireExpired(t testing.TB, id string) {
	t.Helper()
	d, ok := q.DeadLetters(t)[id]
	if !ok || d.Class != "permanent" || !strings.Contains(d.Reason, lambdaapi.ReasonExpiredWindow) {
		t.Fatalf("message %s was not dead-lettered as %s (permanent): %+v (DLQ: %s)", id, lambdaapi.ReasonExpiredWindow, d, describe(q.DeadLetters(t)))
	}
}

// Pump receives one batch (up to size messages) as the event source
// mapping would, runs p on it and deletes the records the response does
// not list. It returns the batch and the response (an empty batch when no
// message is visible).
func (q *Queues) Pump(ctx context.Context, t testing.TB, p *sqsbatch.Processor, size int) (events.SQSEvent, events.SQSEventResponse) {
	t.Helper()
	ev, err := q.Fake.Receive(ctx, q.Source, q.SourceARN, size)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Records) == 0 {
		return ev, events.SQSEventResponse{}
	}
	resp, err := p.Process(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Fake.Settle(ctx, q.Source, ev, resp, true); err != nil {
		t.Fatal(err)
	}
	return ev, resp
}

// Drain pumps batches, advancing the clock past the visibility timeout
// whenever nothing is visible, until the source queue is empty or rounds
// batches ran. It returns the number of batches.
func (q *Queues) Drain(ctx context.Context, t testing.TB, p *sqsbatch.Processor, size, rounds int) int {
	t.Helper()
	for i := 0; i < rounds; i++ {
		states, err := q.Fake.Inspect(q.Source)
		if err != nil {
			t.Fatal(err)
		}
		if len(states) == 0 {
			return i
		}
		ev, _ := q.Pump(ctx, t, p, size)
		if len(ev.Records) == 0 {
			q.Clock.Advance(16 * time.Minute)
		}
	}
	t.Fatalf("queue %s not drained after %d batches", q.Source, rounds)
	return rounds
}

// Record is a record of the source queue as Lambda delivers it, for
// hand-made batches (receive count 1).
func (q *Queues) Record(id, body string) events.SQSMessage {
	return events.SQSMessage{
		MessageId: id, ReceiptHandle: "rh-" + id, Body: body, EventSource: "aws:sqs",
		EventSourceARN: q.SourceARN, AWSRegion: q.Fake.Region(),
		Attributes: map[string]string{string(types.MessageSystemAttributeNameApproximateReceiveCount): "1"},
	}
}

// GroupRecord is Record on a FIFO queue, in message group group.
func (q *Queues) GroupRecord(id, body, group string) events.SQSMessage {
	r := q.Record(id, body)
	r.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] = group
	return r
}

// DeadLetter is one message in the DLQ, with the failure sqsbatch recorded.
type DeadLetter struct {
	Body string
	sqsbatch.DeadLetter
}

// DeadLetters returns the DLQ's messages by original message id.
func (q *Queues) DeadLetters(t testing.TB) map[string]DeadLetter {
	t.Helper()
	st, err := q.Fake.Inspect(q.DLQ)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]DeadLetter{}
	for _, m := range st {
		d, ok := sqsbatch.ParseDeadLetter(m.MessageAttributes)
		id := d.OriginalMessageID
		if !ok {
			id = m.MessageID
		}
		out[id] = DeadLetter{Body: m.Body, DeadLetter: d}
	}
	return out
}

// RequireDeadLetters checks that the DLQ holds exactly the messages of
// want (original message id -> a substring of the reason), each naming
// the test build.
func (q *Queues) RequireDeadLetters(t testing.TB, want map[string]string) {
	t.Helper()
	got := q.DeadLetters(t)
	if len(got) != len(want) {
		t.Errorf("DLQ holds %d messages, want %d: %s", len(got), len(want), describe(got))
	}
	for id, reason := range want {
		d, ok := got[id]
		switch {
		case !ok:
			t.Errorf("message %s is not in the DLQ (DLQ: %s)", id, describe(got))
		case !strings.Contains(d.Reason, reason):
			t.Errorf("DLQ reason of %s = %q, want it to contain %q", id, d.Reason, reason)
		case d.ConsumerVersion != ConsumerVersion:
			t.Errorf("DLQ message %s names build %q, want %q", id, d.ConsumerVersion, ConsumerVersion)
		}
	}
}

func describe(m map[string]DeadLetter) string {
	b, _ := json.Marshal(m)
	return string(b)
}

// Failures returns the message ids of a response's batchItemFailures.
func Failures(resp events.SQSEventResponse) []string {
	var out []string
	for _, f := range resp.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

// Logger returns a logger that discards (the consumers log a line per record).
func Logger(testing.TB) *slog.Logger {
	return slog.New(slog.NewJSONHandler(io.Discard, nil))
}

// Ctx returns a context that ends with the test, bounded to d.
func Ctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Must fails the test on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(fmt.Errorf("unexpected error: %w", err))
	}
}

// APIKey is the key Client sends (localaws.WithBearer(APIKey) on the
// Dependency).
const APIKey = "k-test"

// DepOptions configure Client.
type DepOptions struct {
	// Attempts per call (default 2).
	Attempts int
	// ReadTimeout per attempt (default 2 s).
	ReadTimeout time.Duration
	// Breaker guards the attempts (nil: none).
	Breaker *breaker.Breaker
	// Seed of the retry waits' jitter.
	Seed uint64
}

// Client returns the httpdep client of dependency name on srv. Retry waits
// run on a virtual clock, so a test spends no time in backoff.
func Client(t testing.TB, name string, srv *localaws.Service, o DepOptions) *httpdep.Client {
	t.Helper()
	o.Attempts = cmp.Or(o.Attempts, 2)
	o.ReadTimeout = cmp.Or(o.ReadTimeout, 2*time.Second)
	r, err := retry.New(retry.Policy{MaxAttempts: o.Attempts},
		retry.WithClock(retry.NewVirtualClock(time.Now())), retry.WithRand(retry.NewSeeded(o.Seed)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := httpdep.New(httpdep.Config{Name: name, BaseURL: srv.URL(), Keys: httpdep.StaticKey(APIKey), Retrier: r,
		Breaker: o.Breaker, ReadTimeout: o.ReadTimeout, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Breaker returns a breaker of dependency name on rdb (a private Redis of
// the test, localaws.StartRedis) with a key prefix of this test, on
// now (a *retry.VirtualClock's Now lets the test end the open period).
// Its store timeout is long: on a loaded machine a slow Redis answer must
// not turn into the breaker failing open, which the tests would read as
// the circuit never opening.
func Breaker(t testing.TB, rdb redis.Scripter, name string, threshold int, now func() time.Time) *breaker.Breaker {
	t.Helper()
	b, err := breaker.New(breaker.NewRedisStore(rdb), breaker.Config{
		Name: name, KeyPrefix: localaws.RedisKeyPrefix(t), FailureThreshold: threshold, Now: now, Logger: Logger(t),
		StoreTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Requests counts the requests that reached srv per Idempotency-Key.
func Requests(srv *localaws.Service) map[string]int {
	out := map[string]int{}
	for _, r := range srv.Requests() {
		out[r.IdempotencyKey]++
	}
	return out
}

// Effects counts srv's successful effects (2xx answers of its handler) per
// Idempotency-Key: what the dependency actually did.
func Effects(srv *localaws.Service) map[string]int {
	out := map[string]int{}
	for _, e := range srv.Effects() {
		if e.Response.Status < 300 {
			out[e.IdempotencyKey]++
		}
	}
	return out
}

// VisibleIn is how long until message id of the source queue is visible
// again (0 when it is visible now); ok is false when the message is gone.
func (q *Queues) VisibleIn(t testing.TB, id string) (d time.Duration, ok bool) {
	t.Helper()
	st, err := q.Fake.Inspect(q.Source)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st {
		if m.MessageID == id {
			return max(m.VisibleAt.Sub(q.Clock.Now()), 0), true
		}
	}
	return 0, false
}

// IdempotencyStore returns a store on a fresh idempotency table of srv
// (and the table's name) whose records live the replay window, on the
// queues' clock, as a deployed consumer's do.
func (q *Queues) IdempotencyStore(t testing.TB, srv *localaws.Dynalite) (*idempotency.Store, string) {
	t.Helper()
	table := srv.NewTable(t, "idem", lambdaapi.IdempotencyKeyAttribute, "")
	s, err := idempotency.NewStore(srv.Client, idempotency.Config{TableName: table, Expiry: q.Window, Now: q.Clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, table
}

// OnceDeps are the dependencies of a sqsconsumer.PostProcessor consumer on
// these queues: a fresh idempotency table of srv (IdempotencyStore), the
// local SQS as DLQ sender and visibility changer, and the degrade plan of
// the source queue.
func (q *Queues) OnceDeps(t testing.TB, srv *localaws.Dynalite) sqsconsumer.OnceDeps {
	t.Helper()
	store, _ := q.IdempotencyStore(t, srv)
	plan, err := sqsconsumer.NewPlan(sqsconsumer.PlanConfig{MaxReceiveCount: q.MaxReceiveCount, Sender: q.Fake})
	if err != nil {
		t.Fatal(err)
	}
	return sqsconsumer.OnceDeps{Store: store, DLQ: q.Fake, Visibility: q.Fake, Plan: plan, Logger: Logger(t)}
}
