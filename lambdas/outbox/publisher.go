package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// maxErrorBytes bounds the error text stored in ultimo_error.
const maxErrorBytes = 2000

// maxConcurrentCalls is how many PutEvents calls of one batch may be in
// flight at once.
const maxConcurrentCalls = 4

// MetricsInterval is how often Run writes the metrics: two data points per
// alarm minute.
const MetricsInterval = 30 * time.Second

// PutEventsAPI is the one EventBridge operation the publisher needs.
// *eventbridge.Client implements it; tests pass a fake sink.
type PutEventsAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// ErrInvalidConfig is returned (wrapped) by NewPublisher for a Config that
// cannot work.
var ErrInvalidConfig = errors.New("outbox: invalid publisher config")

// Config configures a Publisher. Zero fields take the documented defaults.
type Config struct {
	// BusName is the target event bus name or ARN (required).
	BusName string
	// Source is the EventBridge source of every event (required), e.g.
	// "mercadofresco.tienda".
	Source string
	// BatchSize is how many rows one claim takes. Default 500: the claim
	// and the marking UPDATE cost a round trip, a commit and a plan each
	// however many rows they carry, so big batches are what makes a
	// publisher fast; the batch is still sent as PutEvents calls of at most
	// 10 entries, four at a time. Memory: the rows of a batch
	// are held once (as details); Add caps a payload at 256 KB, so keep
	// BatchSize x the largest payload within the function's memory.
	BatchSize int
	// Lease is how long a claimed row stays invisible to other publishers.
	// It must comfortably exceed PublishTimeout; when a publisher dies, its
	// rows are re-claimed this long after the claim. Default 30 s.
	Lease time.Duration
	// PublishTimeout bounds the PutEvents phase of one batch, so that a
	// healthy publisher always marks its rows before the lease runs out.
	// Default Lease/2; must be below Lease.
	PublishTimeout time.Duration
	// MaxAttempts is how many claims an event gets before it is parked
	// when EventBridge keeps rejecting it. Default 10.
	MaxAttempts int
	// EntryRetries is how many times failed entries of a call are re-sent
	// within the same round before the row is released. Default 2.
	EntryRetries int
	// RetryBaseDelay is the base of the full-jitter backoff between in-round
	// retries and between attempts of a failing row. Default 100 ms.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the backoff of a failing row (in-round retries are
	// capped at 1 s). Default 2 min.
	RetryMaxDelay time.Duration
	// PollInterval is the wait between rounds that found less than a full
	// batch. Default 1 s.
	PollInterval time.Duration
	// Metrics, if set, receives the gauges (pending, oldest age, parked) and
	// the counters every MetricsInterval while Run runs.
	Metrics metrics.Emitter
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Signer, if set, signs the events it knows (ChargeSigner: every
	// PedidoCreado); its signature is the detail member SignatureKey.
	Signer Signer
}

func (c *Config) setDefaults() {
	c.BatchSize = cmp.Or(c.BatchSize, 500)
	c.Lease = cmp.Or(c.Lease, 30*time.Second)
	c.PublishTimeout = cmp.Or(c.PublishTimeout, c.Lease/2)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 10)
	c.EntryRetries = cmp.Or(c.EntryRetries, 2)
	c.RetryBaseDelay = cmp.Or(c.RetryBaseDelay, 100*time.Millisecond)
	c.RetryMaxDelay = cmp.Or(c.RetryMaxDelay, 2*time.Minute)
	c.PollInterval = cmp.Or(c.PollInterval, time.Second)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func (c *Config) validate() error {
	switch {
	case c.BusName == "":
		return fmt.Errorf("%w: BusName is required", ErrInvalidConfig)
	case c.Source == "":
		return fmt.Errorf("%w: Source is required", ErrInvalidConfig)
	case c.BatchSize < 1 || c.BatchSize > 10000:
		return fmt.Errorf("%w: BatchSize %d not in 1..10000", ErrInvalidConfig, c.BatchSize)
	case c.PublishTimeout >= c.Lease:
		return fmt.Errorf("%w: PublishTimeout %s must be below Lease %s", ErrInvalidConfig, c.PublishTimeout, c.Lease)
	case c.MaxAttempts < 1, c.EntryRetries < 0:
		return fmt.Errorf("%w: MaxAttempts must be >= 1, EntryRetries >= 0", ErrInvalidConfig)
	}
	return nil
}

// Result counts what one round (PublishOnce) did.
type Result struct {
	Claimed   int // rows claimed
	Published int // rows marked published
	Failed    int // rows released for a later attempt
	Parked    int // rows parked as poison
}

func (r *Result) add(o Result) {
	r.Claimed += o.Claimed
	r.Published += o.Published
	r.Failed += o.Failed
	r.Parked += o.Parked
}

// Publisher moves outbox rows to EventBridge. Several publishers (in one
// process or many) may run against the same table at once.
type Publisher struct {
	db  DB
	api PutEventsAPI
	cfg Config

	mu     sync.Mutex
	totals Result // since NewPublisher
	window Result // since the last metrics emission
}

// NewPublisher returns a publisher reading from db and publishing with api.
func NewPublisher(db DB, api PutEventsAPI, cfg Config) (*Publisher, error) {
	if db == nil || api == nil {
		return nil, fmt.Errorf("%w: nil db or api", ErrInvalidConfig)
	}
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Publisher{db: db, api: api, cfg: cfg}, nil
}

// Totals returns the sum of the Results of every round so far.
func (p *Publisher) Totals() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.totals
}

type claimedRow struct {
	id          string
	aggregateID string
	typ         string
	payload     string
	createdAt   time.Time
	attempts    int
}

// outcome of one row in a round.
type outcome struct {
	done      bool // a verdict was reached
	published bool
	err       string
	permanent bool // park now: retrying cannot help
	refund    bool // the bus was unreachable: the attempt does not count
}

// claimSQL leases up to $1 rows. The rows to take are chosen (and locked,
// skipping rows other publishers are locking) by an uncorrelated sub-SELECT
// turned into an array, so PostgreSQL runs it once and then fetches the
// chosen rows through the primary key. Joining a CTE instead let the
// planner hash the whole table (every published row of the last 7 days)
// for batches of a few hundred rows.
const claimSQL = `
UPDATE outbox o
SET bloqueado_hasta = now() + $2 * interval '1 millisecond',
    bloqueado_por   = $3::uuid,
    intentos        = o.intentos + 1
WHERE o.id = ANY (ARRAY(
    SELECT id FROM outbox
    WHERE publicado_en IS NULL AND aparcado_en IS NULL
      AND (bloqueado_hasta IS NULL OR bloqueado_hasta <= now())
    ORDER BY creado_en
    LIMIT $1
    FOR UPDATE SKIP LOCKED))
RETURNING o.id::text, o.agregado_id, o.tipo, o.payload::text, o.creado_en, o.intentos`

const markPublishedSQL = `
UPDATE outbox
SET publicado_en = now(), bloqueado_hasta = NULL, bloqueado_por = NULL
WHERE id = ANY($1::text[]::uuid[]) AND publicado_en IS NULL`

// markFailedSQL releases (with a backoff) or parks failed rows. It only
// touches rows still held by this claim: if our lease ran out and another
// publisher re-claimed a row, its lease is left alone.
const markFailedSQL = `
UPDATE outbox o
SET ultimo_error    = f.err,
    intentos        = o.intentos - f.refund,
    aparcado_en     = CASE WHEN f.park THEN now() END,
    bloqueado_hasta = CASE WHEN f.park THEN NULL ELSE now() + f.backoff_ms * interval '1 millisecond' END,
    bloqueado_por   = NULL
FROM unnest($1::text[], $2::text[], $3::bool[], $4::int[], $5::bigint[]) AS f(id, err, park, refund, backoff_ms)
WHERE o.id = f.id::uuid AND o.bloqueado_por = $6::uuid AND o.publicado_en IS NULL`

// PublishOnce runs one round: claim up to BatchSize rows with a lease
// (one short autocommit statement, so no row lock or transaction is held
// while EventBridge is called), publish them, then record the verdicts.
//
// ctx only bounds the claim; once rows are claimed the round finishes with
// its own PublishTimeout so that cancelling a publisher (Lambda nearing its
// deadline, SIGTERM) does not strand a claimed batch until its lease expires.
func (p *Publisher) PublishOnce(ctx context.Context) (Result, error) {
	b, err := p.claimAndPublish(ctx)
	if err != nil || len(b.claimed) == 0 {
		return Result{}, err
	}
	return p.finish(ctx, b)
}

// batch is a claimed and sent batch waiting for its verdicts to be
// recorded.
type batch struct {
	token    uuid.UUID
	claimed  []claimedRow
	outcomes []outcome
}

// claimAndPublish is the first half of a round: claim, then PutEvents.
func (p *Publisher) claimAndPublish(ctx context.Context) (batch, error) {
	token := uuid.New()
	var claimed []claimedRow
	err := p.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, claimSQL, p.cfg.BatchSize, p.cfg.Lease.Milliseconds(), token.String())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r claimedRow
			if err := rows.Scan(&r.id, &r.aggregateID, &r.typ, &r.payload, &r.createdAt, &r.attempts); err != nil {
				return fmt.Errorf("scan: %w", err)
			}
			claimed = append(claimed, r)
		}
		return rows.Err()
	})
	if err != nil {
		return batch{}, fmt.Errorf("outbox: claim: %w", err)
	}
	if len(claimed) == 0 {
		return batch{}, nil
	}
	// UPDATE ... RETURNING does not keep the sub-SELECT's order.
	slices.SortFunc(claimed, func(a, b claimedRow) int { return a.createdAt.Compare(b.createdAt) })

	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.PublishTimeout)
	defer cancel()
	return batch{token: token, claimed: claimed, outcomes: p.publish(pctx, claimed)}, nil
}

// finish is the second half of a round: record the verdicts, even if the
// publish phase timed out or ctx is done (a fresh timeout for the small
// UPDATEs), and add them to the counters.
func (p *Publisher) finish(ctx context.Context, b batch) (Result, error) {
	mctx, mcancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.Lease/2)
	defer mcancel()
	res, err := p.record(mctx, b.token, b.claimed, b.outcomes)
	p.mu.Lock()
	p.totals.add(res)
	p.window.add(res)
	p.mu.Unlock()
	return res, err
}

// publish builds the entries, packs them into calls and sends the calls,
// at most maxConcurrentCalls at a time.
func (p *Publisher) publish(ctx context.Context, claimed []claimedRow) []outcome {
	outcomes := make([]outcome, len(claimed))
	entries := make([]types.PutEventsRequestEntry, len(claimed))
	sizes := make([]int, len(claimed))
	for i, r := range claimed {
		sig, err := p.sign(ctx, r)
		if err != nil {
			outcomes[i] = outcome{done: true, err: err.Error(), permanent: errors.Is(err, ErrUnsignable), refund: !errors.Is(err, ErrUnsignable)}
			sizes[i] = MaxEntryBytes + 1 // never packed into a call
			claimed[i].payload = ""
			continue
		}
		detail := encodeDetail(r, sig)
		entries[i] = types.PutEventsRequestEntry{
			EventBusName: aws.String(p.cfg.BusName),
			Source:       aws.String(p.cfg.Source),
			DetailType:   aws.String(r.typ),
			Detail:       aws.String(string(detail)),
			Time:         aws.Time(r.createdAt),
		}
		sizes[i] = EntrySize(entries[i])
		claimed[i].payload = "" // held in the detail now; halves a batch's memory
	}
	// A row that could not be signed is left out of every call by its size
	// and keeps the verdict set above.
	calls, tooLarge := pack(sizes, MaxEntriesPerCall, MaxEntryBytes)
	for _, i := range tooLarge {
		if !outcomes[i].done {
			outcomes[i] = outcome{done: true, permanent: true,
				err: fmt.Sprintf("%v: entry of %d bytes (limit %d)", ErrEventTooLarge, sizes[i], MaxEntryBytes)}
		}
	}
	var g errgroup.Group
	g.SetLimit(maxConcurrentCalls)
	for _, call := range calls {
		g.Go(func() error { p.send(ctx, entries, call, outcomes); return nil })
	}
	_ = g.Wait()
	return outcomes
}

// sign is the row's signature, "" without a Signer or for a type it does
// not sign.
func (p *Publisher) sign(ctx context.Context, r claimedRow) (string, error) {
	if p.cfg.Signer == nil {
		return "", nil
	}
	sig, err := p.cfg.Signer.Sign(ctx, r.typ, r.id, r.payload)
	if err != nil {
		return "", fmt.Errorf("outbox: sign %s %s: %w", r.typ, r.id, err)
	}
	return sig, nil
}

// encodeDetail builds the event detail by hand: the Detail keys, then the
// payload's own members. The payload comes from a jsonb column, so it is
// a valid JSON object already; decoding and re-encoding it would only burn
// CPU (it was the publisher's main CPU cost). TestEncodeDetail checks the
// result against a decode of the parts.
//
// The Detail keys always carry the row's values: a payload member with one
// of their names (refused by Add and by the outbox_payload_sin_metadatos
// constraint, so only a row written before them can have one) is dropped,
// never emitted beside the publisher's (decoders keep the last duplicate).
// jsonb prints keys with the escaping JSON requires and nothing more, so a
// payload that does not contain the quoted key names cannot have such a
// member; only one that does pays for a decode.
//
// A signature sig ("" for none) is the member SignatureKey, set the same
// way: a payload member of that name is dropped.
func encodeDetail(r claimedRow, sig string) string {
	b := make([]byte, 0, len(r.payload)+len(r.aggregateID)+len(sig)+128)
	b = append(b, `{"id_evento":"`...)
	b = append(b, r.id...) // a uuid's text form needs no escaping
	b = append(b, `","agregado_id":`...)
	b = appendJSONString(b, r.aggregateID)
	b = append(b, `,"creado_en":"`...)
	b = r.createdAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if sig != "" {
		b = append(b, `,"`+SignatureKey+`":`...)
		b = appendJSONString(b, sig)
	}
	if mentionsReservedKey(r.payload) || (sig != "" && strings.Contains(r.payload, signatureQuoted)) {
		return string(appendMembersWithout(b, r.payload, sig != ""))
	}
	members := strings.TrimSpace(r.payload)
	members = strings.TrimSpace(members[1:]) // drop the object's '{'
	if members != "}" {
		b = append(b, ',')
	}
	b = append(b, members...)
	return string(b)
}

// signatureQuoted is SignatureKey as it appears in JSON text.
const signatureQuoted = `"` + SignatureKey + `"`

// reservedQuoted are ReservedDetailKeys as they appear in JSON text.
var reservedQuoted = func() []string {
	q := make([]string, len(ReservedDetailKeys))
	for i, k := range ReservedDetailKeys {
		q[i] = `"` + k + `"`
	}
	return q
}()

func mentionsReservedKey(payload string) bool {
	return slices.ContainsFunc(reservedQuoted, func(q string) bool { return strings.Contains(payload, q) })
}

// appendMembersWithout appends the payload's top-level members except the
// reserved keys (and SignatureKey when signed; values copied as they are,
// keys in sorted order) and closes the object. A payload that does not
// decode as an object (not possible from a jsonb object column)
// contributes no members.
func appendMembersWithout(b []byte, payload string, signed bool) []byte {
	var members map[string]json.RawMessage
	_ = json.Unmarshal([]byte(payload), &members)
	for _, k := range ReservedDetailKeys {
		delete(members, k)
	}
	if signed {
		delete(members, SignatureKey)
	}
	for _, k := range slices.Sorted(maps.Keys(members)) {
		b = append(b, ',')
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = append(b, members[k]...)
	}
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // cannot fail for a string
	return append(b, q...)
}

// send publishes the entries idx in one PutEvents call and re-sends only
// the entries that failed, up to EntryRetries times. Each goroutine writes
// only the outcomes of its own indexes.
func (p *Publisher) send(ctx context.Context, entries []types.PutEventsRequestEntry, idx []int, outcomes []outcome) {
	pending := idx
	for attempt := 0; ; attempt++ {
		batch := make([]types.PutEventsRequestEntry, len(pending))
		for k, i := range pending {
			batch[k] = entries[i]
		}
		out, err := p.api.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: batch})
		if err == nil && len(out.Entries) != len(batch) {
			err = fmt.Errorf("PutEvents answered %d entries for %d sent", len(out.Entries), len(batch))
		}
		if err != nil {
			if isRequestRejected(err) {
				if len(pending) > 1 {
					// One bad entry makes the whole request invalid: bisect to
					// isolate it (about log2(10) extra calls) instead of
					// failing its nine neighbours.
					half := len(pending) / 2
					p.send(ctx, entries, pending[:half], outcomes)
					p.send(ctx, entries, pending[half:], outcomes)
					return
				}
				outcomes[pending[0]] = outcome{done: true, permanent: true, err: "PutEvents rejected the entry: " + err.Error()}
				return
			}
			// The bus was unreachable, throttled us beyond the SDK's retries,
			// or we ran out of time: nothing is wrong with the events, so
			// the attempt is refunded (an outage must not park events).
			for _, i := range pending {
				outcomes[i] = outcome{done: true, refund: true, err: "PutEvents call failed: " + err.Error()}
			}
			return
		}
		var failed []int
		for k, r := range out.Entries {
			i := pending[k]
			if r.ErrorCode == nil {
				outcomes[i] = outcome{done: true, published: true}
				continue
			}
			code := aws.ToString(r.ErrorCode)
			msg := code + ": " + aws.ToString(r.ErrorMessage)
			if permanentEntryError(code) {
				outcomes[i] = outcome{done: true, permanent: true, err: msg}
				continue
			}
			outcomes[i] = outcome{done: true, err: msg}
			failed = append(failed, i)
		}
		if len(failed) == 0 || attempt >= p.cfg.EntryRetries {
			return
		}
		if retry.SystemClock.Sleep(ctx, retry.FullJitter(p.cfg.RetryBaseDelay, time.Second, attempt, nil)) != nil {
			return
		}
		pending = failed
	}
}

// permanentEntryError reports entry error codes that no retry can fix:
// the entry itself is malformed. Anything else (InternalFailure,
// ThrottlingException, unknown codes) is retried a bounded number of times.
func permanentEntryError(code string) bool {
	switch code {
	case "MalformedDetail", "InvalidArgument", "ValidationException", "InvalidEventPatternException":
		return true
	}
	return false
}

// isRequestRejected reports a client-side error that the request content
// caused (as opposed to credentials, permissions, throttling or the
// network), so splitting the request can isolate the bad entry.
func isRequestRejected(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "ValidationException", "InvalidArgument", "MalformedDetail", "RequestEntityTooLargeException", "SerializationException":
		return true
	}
	return false
}

// record applies the outcomes: one UPDATE for the published rows and one
// for the failed ones.
func (p *Publisher) record(ctx context.Context, token uuid.UUID, claimed []claimedRow, outcomes []outcome) (Result, error) {
	res := Result{Claimed: len(claimed)}
	var pubIDs, ids, errs []string
	var parks []bool
	var refunds []int32
	var backoffs []int64
	for i, o := range outcomes {
		r := claimed[i]
		if !o.done {
			// Never sent (publish phase timed out first).
			o = outcome{refund: true, err: "not sent before the publish timeout"}
		}
		if o.published {
			pubIDs = append(pubIDs, r.id)
			continue
		}
		refund := int32(0)
		if o.refund {
			refund = 1
		}
		park := o.permanent || (!o.refund && r.attempts >= p.cfg.MaxAttempts)
		if park {
			res.Parked++
			p.cfg.Logger.Error("outbox: event parked", "id_evento", r.id, "tipo", r.typ, "intentos", r.attempts, "error", o.err)
		} else {
			res.Failed++
			p.cfg.Logger.Warn("outbox: publish failed, will retry", "id_evento", r.id, "tipo", r.typ, "intentos", r.attempts, "error", o.err)
		}
		ids = append(ids, r.id)
		errs = append(errs, retry.Truncate(o.err, maxErrorBytes))
		parks = append(parks, park)
		refunds = append(refunds, refund)
		backoffs = append(backoffs, retry.FullJitter(p.cfg.RetryBaseDelay, p.cfg.RetryMaxDelay, r.attempts, nil).Milliseconds())
	}
	// Both UPDATEs in one transaction: one commit (asynchronous, see
	// inTx) for the whole verdict of the batch.
	err := p.inTx(ctx, func(tx pgx.Tx) error {
		if len(pubIDs) > 0 {
			tag, err := tx.Exec(ctx, markPublishedSQL, pubIDs)
			if err != nil {
				return fmt.Errorf("mark %d published: %w", len(pubIDs), err)
			}
			res.Published = int(tag.RowsAffected())
		}
		if len(ids) > 0 {
			if _, err := tx.Exec(ctx, markFailedSQL, ids, errs, parks, refunds, backoffs, token.String()); err != nil {
				return fmt.Errorf("record %d failures: %w", len(ids), err)
			}
		}
		return nil
	})
	if err != nil {
		// The events are on the bus but not marked: the lease expires and
		// they are published again with the same id (at-least-once); the
		// failures are retried when the lease expires.
		res.Published = 0
		return res, fmt.Errorf("outbox: record verdicts: %w", err)
	}
	return res, nil
}

// asyncCommitSQL makes the COMMIT of the publisher's own transaction (the
// claim, the verdicts) return without waiting for the WAL flush. SET LOCAL:
// the setting ends with the transaction, so a pooled connection that the
// shop later uses for an order commits synchronously as configured. Why
// losing such a commit is safe: see "Asynchronous commit" in the package
// doc.
const asyncCommitSQL = "SET LOCAL synchronous_commit = off"

// inTx runs fn in a short transaction with asynchronous commit.
func (p *Publisher) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := p.db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, asyncCommitSQL); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Run publishes until ctx is done: a round, then another at once if the
// batch was full (backlog), else after PollInterval or as soon as wake
// fires (see Listen; wake may be nil). Errors of a round are logged and the
// loop goes on after a growing, jittered wait. When ctx ends Run finishes the
// round in flight, flushes the metrics and returns nil if the last round
// succeeded, or an error wrapping the last round's error (with the number of
// consecutive failed rounds) if the publisher was failing when it stopped,
// so a publisher that cannot reach its database or bus fails its Lambda
// invocation and the function's Errors alarm fires.
func (p *Publisher) Run(ctx context.Context, wake <-chan struct{}) error {
	lastMetrics := time.Time{}
	flush := func(mctx context.Context) {
		if p.cfg.Metrics == nil {
			return
		}
		if err := p.emitMetrics(mctx); err != nil {
			p.cfg.Logger.Warn("outbox: metrics", "error", err)
		}
		lastMetrics = time.Now()
	}
	defer func() {
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		flush(mctx)
	}()
	// While batches come back full, a batch's verdicts are recorded in the
	// background while the next batch is claimed and sent; at most two marks
	// are in flight ("Overlapping rounds", docs/design.md#outbox-publisher).
	type marked struct {
		res Result
		err error
	}
	var inFlight chan marked // the previous batch's mark, if any
	collect := func() error {
		if inFlight == nil {
			return nil
		}
		m := <-inFlight
		inFlight = nil
		return m.err
	}
	defer func() { _ = collect() }()
	consecutiveErrors := 0
	var lastErr error
	for ctx.Err() == nil {
		if time.Since(lastMetrics) >= MetricsInterval {
			flush(ctx)
		}
		b, err := p.claimAndPublish(ctx)
		var cur chan marked
		if len(b.claimed) > 0 {
			cur = make(chan marked, 1)
			go func(b batch) {
				res, err := p.finish(ctx, b)
				cur <- marked{res, err}
			}(b)
		}
		err = errors.Join(err, collect())
		inFlight = cur
		full := err == nil && len(b.claimed) == p.cfg.BatchSize
		if !full {
			// Idle or failing: settle this batch before waiting.
			err = errors.Join(err, collect())
		}
		wait := p.cfg.PollInterval
		switch {
		case err != nil && ctx.Err() == nil:
			consecutiveErrors++
			lastErr = err
			p.cfg.Logger.Error("outbox: publish round failed", "error", err)
			// At least PollInterval, plus a growing jittered backoff, so a
			// database outage is never hammered in a tight loop.
			wait = p.cfg.PollInterval + retry.FullJitter(p.cfg.PollInterval, 30*time.Second, consecutiveErrors, nil)
		case full:
			consecutiveErrors = 0
			continue
		default:
			consecutiveErrors = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		case _, ok := <-wake:
			if !ok {
				wake = nil // listener gone: plain polling from now on
			}
		}
		t.Stop()
	}
	if err := collect(); err != nil {
		consecutiveErrors++
		lastErr = err
	}
	if consecutiveErrors > 0 {
		return fmt.Errorf("outbox: publisher stopped while failing (%d consecutive failed rounds): %w", consecutiveErrors, lastErr)
	}
	return nil
}

// emitMetrics writes the gauges and the counters since the last emission.
func (p *Publisher) emitMetrics(ctx context.Context) error {
	g, err := ReadGauges(ctx, p.db)
	if err != nil {
		return err
	}
	p.mu.Lock()
	t := p.window
	p.window = Result{}
	p.mu.Unlock()
	return p.cfg.Metrics.Write(append(g.Metrics(),
		metrics.Metric{Name: lambdaapi.MetricOutboxPublished, Unit: metrics.UnitCount, Value: float64(t.Published)},
		metrics.Metric{Name: lambdaapi.MetricOutboxFailedAttempts, Unit: metrics.UnitCount, Value: float64(t.Failed)},
		metrics.Metric{Name: lambdaapi.MetricOutboxNewlyParked, Unit: metrics.UnitCount, Value: float64(t.Parked)},
	)...)
}
