package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Option configures one [Do] call.
type Option func(*callOptions)

type callOptions struct {
	payload    any
	hasPayload bool
	hash       string
}

// WithPayload turns on payload validation for the call: the canonical hash
// of v (see [CanonicalHash]) is stored with the record, and a later call
// with the same key and a different payload fails with ErrPayloadMismatch
// instead of silently replaying another request's result.
func WithPayload(v any) Option {
	return func(o *callOptions) { o.payload, o.hasPayload = v, true }
}

// MaxResultBytes bounds the JSON of a stored result, leaving room under
// DynamoDB's 400 KB item limit for the key and the other attributes.
const MaxResultBytes = 350 << 10

// CodeUnstorableResult is the error_codigo recorded when the handler
// succeeded but its result cannot be encoded as JSON or exceeds
// MaxResultBytes.
const CodeUnstorableResult = "resultado_no_almacenable"

// Stored error texts are capped: they are for people, and an unbounded
// message must not push the item past DynamoDB's size limit.
const (
	maxErrorCodeBytes    = 256
	maxErrorMessageBytes = 4 << 10
)

// maxClaimRounds bounds the claim loop when the item changes between a
// failed condition and the consistent read (dynalite-style fallback only).
const maxClaimRounds = 5

// Backoff for InProgressWait: full jitter, uniform(0, min(cap, base·2^n)).
const (
	waitBase = 50 * time.Millisecond
	waitCap  = time.Second
)

// Do runs fn once in effect per key and returns its result; every
// later call with the same key (until the record expires) returns the same
// result without running fn.
//
//   - fn succeeds: the result is stored as COMPLETADO and returned. Every
//     repeat decodes the stored JSON into a T.
//   - fn returns a permanent failure with a code (failure.Permanent): the
//     code and the text are stored as FALLIDO and it is returned; every
//     repeat gets an equivalent *failure.Error (errors.Is matches by code).
//   - fn returns any other error (or panics): the key is released so the
//     redelivery can try again, and the error is returned unchanged.
//   - fn succeeds with a result that cannot be stored (not encodable as
//     JSON, or over MaxResultBytes): recorded as FALLIDO with code
//     CodeUnstorableResult, because releasing would repeat the side effect.
//   - another owner holds a live lock: [*InProgressError] (after waiting up
//     to Config.InProgressWait).
//
// A transient error releases the key even when the side effect may already
// have happened (a timeout after the gateway charged): that gap is closed
// only by the downstream's own idempotency, so fn should forward key to it
// (the payment gateway's Idempotency-Key header).
//
// Recording the outcome uses a context detached from ctx's cancellation,
// bounded by Config.FinalizeTimeout, because the side effect has already
// happened.
func Do[T any](ctx context.Context, s *Store, key string, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	var zero T
	if s == nil || fn == nil {
		return zero, errors.New("idempotency: Do needs a Store (NewStore) and a handler")
	}
	if err := validateKey(key); err != nil {
		return zero, err
	}
	var o callOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.hasPayload {
		h, err := CanonicalHash(o.payload)
		if err != nil {
			return zero, err
		}
		o.hash = h
	}

	if s.cache != nil {
		if rec, ok := s.cache.get(key, s.cfg.Now()); ok {
			if err := checkHash(key, rec, o.hash); err != nil {
				return zero, err
			}
			return decodeResult[T](key, rec)
		}
	}

	claim, rec, err := s.acquire(ctx, key, o.hash)
	if err != nil {
		return zero, err
	}
	if claim == nil {
		return replay[T](key, rec, s)
	}
	return execute(ctx, s, claim, fn)
}

// replay turns a terminal record into Do's answer.
func replay[T any](key string, rec record, s *Store) (T, error) {
	var zero T
	switch rec.status {
	case StatusCompleted:
		v, err := decodeResult[T](key, rec)
		if err == nil && s.cache != nil {
			s.cache.put(key, rec)
		}
		return v, err
	case StatusFailed:
		return zero, &failure.Error{Kind: failure.KindPermanent, Code: rec.errCode, Err: errors.New(rec.errMsg), Replayed: true}
	default:
		// acquire never hands back a live EN_CURSO record.
		return zero, &RecordError{Key: key, Reason: fmt.Sprintf("unexpected %s %q", attrEstado, rec.status)}
	}
}

func decodeResult[T any](key string, rec record) (T, error) {
	var v T
	if err := json.Unmarshal(rec.result, &v); err != nil {
		var zero T
		return zero, &RecordError{Key: key, Reason: fmt.Sprintf("%s does not decode into %T", attrResultado, v), Err: err}
	}
	return v, nil
}

func checkHash(key string, rec record, hash string) error {
	// Validation needs both sides: a record written without a hash (or a
	// call without a payload) cannot be compared and is accepted.
	if hash != "" && rec.payloadHash != "" && hash != rec.payloadHash {
		return fmt.Errorf("%w: key %q", ErrPayloadMismatch, key)
	}
	return nil
}

// claim is a won EN_CURSO lock.
type claim struct {
	key   string
	owner string
	hash  string
}

// execute runs fn under a won claim and records its outcome.
func execute[T any](ctx context.Context, s *Store, c *claim, fn func(context.Context) (T, error)) (res T, err error) {
	finished := false
	defer func() {
		if !finished {
			// fn panicked: the panic continues, but the key is released
			// first so that the redelivery is not blocked for the whole lock
			// window.
			_ = s.release(ctx, c)
		}
	}()
	res, err = fn(ctx)
	finished = true

	var zero T
	if err != nil {
		var pe *failure.Error
		if errors.As(err, &pe) && pe.Kind == failure.KindPermanent && pe.Code != "" {
			if ferr := s.fail(ctx, c, pe); ferr != nil {
				return zero, errors.Join(err, ferr)
			}
			return zero, err
		}
		if rerr := s.release(ctx, c); rerr != nil {
			return zero, errors.Join(err, rerr)
		}
		return zero, err
	}

	data, merr := json.Marshal(res)
	if merr == nil && len(data) > MaxResultBytes {
		merr = fmt.Errorf("encoded result is %d bytes, the limit is %d", len(data), MaxResultBytes)
	}
	if merr != nil {
		// The side effect has happened but its result cannot be stored, so
		// it could not be replayed. Releasing the key would let the next
		// delivery repeat the side effect (a second charge); recording a
		// permanent failure stops the repeats and tells the operator.
		pe := &failure.Error{Kind: failure.KindPermanent, Code: CodeUnstorableResult, Err: fmt.Errorf("result of key %q cannot be stored: %w", c.key, merr)}
		if ferr := s.fail(ctx, c, pe); ferr != nil {
			return zero, errors.Join(pe, ferr)
		}
		return zero, pe
	}
	rec, cerr := s.complete(ctx, c, data)
	if cerr != nil {
		return zero, cerr
	}
	if s.cache != nil {
		s.cache.put(c.key, rec)
	}
	return res, nil
}

// acquire claims the key (claim != nil) or returns the terminal record that
// holds it. A live lock of another owner yields *InProgressError, after
// waiting up to Config.InProgressWait.
func (s *Store) acquire(ctx context.Context, key, hash string) (*claim, record, error) {
	var waitUntil time.Time
	if s.cfg.InProgressWait > 0 {
		waitUntil = time.Now().Add(s.cfg.InProgressWait)
	}
	for attempt := 0; ; attempt++ {
		c, rec, err := s.tryClaim(ctx, key, hash)
		var ip *InProgressError
		if err == nil || !errors.As(err, &ip) || waitUntil.IsZero() {
			return c, rec, err
		}
		left := time.Until(waitUntil)
		if left <= 0 {
			return nil, record{}, err
		}
		d := retry.FullJitter(waitBase, waitCap, attempt, nil)
		if serr := retry.SystemClock.Sleep(ctx, min(d, left)); serr != nil {
			return nil, record{}, errors.Join(err, serr)
		}
	}
}

// tryClaim makes one claim: a conditional PutItem, and on a failed
// condition the existing item (from ALL_OLD, else a consistent GetItem).
func (s *Store) tryClaim(ctx context.Context, key, hash string) (*claim, record, error) {
	for range maxClaimRounds {
		now := s.cfg.Now()
		owner := newOwnerToken(ctx)
		item := map[string]types.AttributeValue{
			s.cfg.KeyAttribute: attrS(key),
			attrEstado:         attrS(string(StatusInProgress)),
			attrCaducaBloqueo:  attrN(s.lockExpiry(ctx, now).UnixMilli()),
			attrExpiraEn:       attrN(now.Add(s.cfg.Expiry).Unix()),
			attrPropietario:    attrS(owner),
		}
		if hash != "" {
			item[attrHashCarga] = attrS(hash)
		}
		_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.cfg.TableName),
			Item:      item,
			// Absent, expired (TTL not run yet), or a lock whose owner died.
			ConditionExpression: aws.String("attribute_not_exists(#k) OR #exp < :ahora_s OR (#est = :en_curso AND #cb < :ahora_ms)"),
			ExpressionAttributeNames: map[string]string{
				"#k": s.cfg.KeyAttribute, "#exp": attrExpiraEn, "#est": attrEstado, "#cb": attrCaducaBloqueo,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":ahora_s":  attrN(now.Unix()),
				":ahora_ms": attrN(now.UnixMilli()),
				":en_curso": attrS(string(StatusInProgress)),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return &claim{key: key, owner: owner, hash: hash}, record{}, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return nil, record{}, fmt.Errorf("%w: claim key %q: %w", ErrStore, key, err)
		}
		// The failed condition is the answer: somebody holds the key.
		old := ccf.Item
		if len(old) == 0 {
			item, gerr := s.read(ctx, key)
			if gerr != nil {
				return nil, record{}, fmt.Errorf("%w: read key %q: %w", ErrStore, key, gerr)
			}
			if len(item) == 0 {
				continue // released between our two calls: claim again
			}
			old = item
		}
		rec, derr := decodeRecord(key, old)
		if derr != nil {
			return nil, record{}, derr
		}
		if err := checkHash(key, rec, hash); err != nil {
			return nil, record{}, err
		}
		if rec.owner == owner && rec.status == StatusInProgress {
			// Our own claim: the SDK retried a PutItem whose response was
			// lost and the retry met the item the first attempt wrote.
			return &claim{key: key, owner: owner, hash: hash}, record{}, nil
		}
		if rec.expired(now) {
			// Only possible when the item was read after the condition was
			// evaluated (GetItem fallback): it changed in between. Claim
			// again rather than report a state that no longer holds.
			continue
		}
		if rec.status == StatusInProgress {
			return nil, record{}, &InProgressError{Key: key, LockExpiresAt: rec.lockExpiresAt}
		}
		return nil, rec, nil
	}
	return nil, record{}, &InProgressError{Key: key, LockExpiresAt: s.cfg.Now()}
}

// ownerCondition fences completion and release: only the claim that wrote
// the EN_CURSO record may change it.
const ownerCondition = "#prop = :prop AND #est = :en_curso"

func (s *Store) complete(ctx context.Context, c *claim, result []byte) (record, error) {
	exp := time.Unix(s.cfg.Now().Add(s.cfg.Expiry).Unix(), 0)
	err := s.finish(ctx, c, StatusCompleted, "record result of", map[string]types.AttributeValue{
		attrResultado: attrS(string(result)), attrExpiraEn: attrN(exp.Unix())})
	if err != nil {
		return record{}, err
	}
	return record{status: StatusCompleted, result: result, expiresAt: exp, owner: c.owner, payloadHash: c.hash}, nil
}

func (s *Store) fail(ctx context.Context, c *claim, pe *failure.Error) error {
	return s.finish(ctx, c, StatusFailed, "record permanent failure of", map[string]types.AttributeValue{
		attrErrorCodigo:  attrS(retry.Truncate(pe.Code, maxErrorCodeBytes)),
		attrErrorMensaje: attrS(retry.Truncate(pe.Err.Error(), maxErrorMessageBytes)),
		attrExpiraEn:     attrN(s.cfg.Now().Add(s.cfg.Expiry).Unix()),
	})
}

// finish moves the claim's EN_CURSO record to st with the attributes set
// (and without its lock), fenced by ownerCondition.
func (s *Store) finish(ctx context.Context, c *claim, st Status, what string, set map[string]types.AttributeValue) error {
	ctx, cancel := s.finalizeContext(ctx)
	defer cancel()
	names := map[string]string{"#est": attrEstado, "#cb": attrCaducaBloqueo, "#prop": attrPropietario}
	values := map[string]types.AttributeValue{":est": attrS(string(st)), ":prop": attrS(c.owner), ":en_curso": attrS(string(StatusInProgress))}
	expr := "SET #est = :est"
	for i, name := range slices.Sorted(maps.Keys(set)) {
		n := strconv.Itoa(i)
		names["#a"+n], values[":a"+n] = name, set[name]
		expr += ", #a" + n + " = :a" + n
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.cfg.TableName),
		Key:                                 s.itemKey(c.key),
		UpdateExpression:                    aws.String(expr + " REMOVE #cb"),
		ConditionExpression:                 aws.String(ownerCondition),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil && !s.alreadyDone(ctx, c, err, st) {
		return s.finalizeError(what, c, err)
	}
	return nil
}

func (s *Store) release(ctx context.Context, c *claim) error {
	ctx, cancel := s.finalizeContext(ctx)
	defer cancel()
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:           aws.String(s.cfg.TableName),
		Key:                 s.itemKey(c.key),
		ConditionExpression: aws.String(ownerCondition),
		ExpressionAttributeNames: map[string]string{
			"#est": attrEstado, "#prop": attrPropietario,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":prop":     attrS(c.owner),
			":en_curso": attrS(string(StatusInProgress)),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil && !s.alreadyDone(ctx, c, err, "") {
		return s.finalizeError("release", c, err)
	}
	return nil
}

// alreadyDone reports whether a write that failed its owner condition had
// in fact already been applied by this owner: the SDK retries a request
// whose response was lost, and the retry then fails the condition against
// the effect of the first attempt. want is the state the write produces
// ("" for a release, which leaves no item). It costs a consistent GetItem
// only when the service did not return the item (no ALL_OLD) and only on
// this rare path.
func (s *Store) alreadyDone(ctx context.Context, c *claim, err error, want Status) bool {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return false
	}
	item := ccf.Item
	if len(item) == 0 {
		var gerr error
		if item, gerr = s.read(ctx, c.key); gerr != nil {
			return false
		}
		ccf.Item = item // for finalizeError's message
	}
	if len(item) == 0 {
		// Nothing under the key: a release has reached its goal (whoever
		// deleted it), a completion has not.
		return want == ""
	}
	rec, derr := decodeRecord(c.key, item)
	return derr == nil && want != "" && rec.owner == c.owner && rec.status == want
}

// finalizeError classifies a failed completion, failure record or release.
func (s *Store) finalizeError(what string, c *claim, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		detail := "the record is gone"
		if len(ccf.Item) > 0 {
			if rec, derr := decodeRecord(c.key, ccf.Item); derr == nil {
				detail = fmt.Sprintf("the record is now %s owned by %q", rec.status, rec.owner)
			}
		}
		return fmt.Errorf("%w: %s key %q: lock of %q expired and was taken over (%s)", ErrLockLost, what, c.key, c.owner, detail)
	}
	return fmt.Errorf("%w: %s key %q: %w", ErrStore, what, c.key, err)
}
