package idempotency

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// Defaults applied by [NewStore] to zero Config fields.
const (
	// DefaultExpiry is the record lifetime (TTL on expira_en) of a caller
	// without a replay window of its own: 24 h. The payment
	// tasks use it (their repeats come from the workflow's retries, inside
	// the execution's 1-hour timeout); the queue consumers keep their
	// records as long as their window (Config.Expiry,
	// docs/design.md#replay-windows).
	DefaultExpiry = 24 * time.Hour
	// DefaultLockWindow applies when neither Config.LockWindow nor a
	// context deadline bounds the handler: the longest a Lambda can run.
	DefaultLockWindow = 15 * time.Minute
	// DefaultFinalizeTimeout bounds the write that records the outcome.
	DefaultFinalizeTimeout = 5 * time.Second
)

// Names shared with the infrastructure (constructs/datastore.NewIdempotency), so the
// table and the library cannot disagree.

// DynamoDBAPI is the part of *dynamodb.Client the store uses. Tests wrap it
// to count or fake calls.
type DynamoDBAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ DynamoDBAPI = (*dynamodb.Client)(nil)

// Config configures a [Store]. Only TableName is required; the zero value
// of every other field selects the documented default.
type Config struct {
	// TableName is the idempotency table, e.g. from the environment
	// variable the CDK construct sets.
	TableName string

	// KeyAttribute is the partition key attribute; default "clave".
	KeyAttribute string

	// Expiry is how long a record (and the result it replays) lives;
	// default 24 h. It is written to expira_en for DynamoDB TTL, and
	// records past it count as absent even before TTL deletes them.
	Expiry time.Duration

	// LockWindow, when positive, caps how long an EN_CURSO lock lasts. The
	// context deadline (the Lambda's remaining time) caps it too; with
	// neither, DefaultLockWindow applies. Keep it above the handler's
	// worst-case duration: a lock that ends while the owner still runs lets
	// a second owner in.
	LockWindow time.Duration

	// CacheSize, when positive, keeps up to that many COMPLETADO records in
	// an in-process LRU cache, so a duplicate in the same warm Lambda costs
	// no DynamoDB call. EN_CURSO and FALLIDO records are never cached.
	CacheSize int

	// InProgressWait, when positive, makes [Do] wait up to that long (with
	// full-jitter backoff, re-trying the claim) for another owner to finish
	// instead of returning ErrInProgress at once.
	InProgressWait time.Duration

	// FinalizeTimeout bounds the write that records the outcome or releases
	// the key; it runs even when the caller's context is already done,
	// because the side effect has happened and must be recorded. Default
	// 5 s.
	FinalizeTimeout time.Duration

	// Now is the clock; default time.Now. Tests inject a fake one.
	Now func() time.Time
}

// Store runs idempotent operations against one table. It is safe for
// concurrent use; create one per Lambda cold start and reuse it.
type Store struct {
	db    DynamoDBAPI
	cfg   Config
	cache *lru
}

// NewStore validates cfg, fills in the defaults and returns a Store.
func NewStore(db DynamoDBAPI, cfg Config) (*Store, error) {
	if db == nil {
		return nil, errors.New("idempotency: nil DynamoDB client")
	}
	if cfg.TableName == "" {
		return nil, errors.New("idempotency: Config.TableName is required (a consumer Lambda finds it in $" + lambdaapi.EnvIdempotencyTable + ")")
	}
	cfg.KeyAttribute = cmp.Or(cfg.KeyAttribute, lambdaapi.IdempotencyKeyAttribute)
	for _, a := range []string{attrEstado, attrResultado, attrCaducaBloqueo, attrExpiraEn, attrPropietario, attrHashCarga, attrErrorCodigo, attrErrorMensaje} {
		if cfg.KeyAttribute == a {
			return nil, fmt.Errorf("idempotency: Config.KeyAttribute %q collides with a record attribute", a)
		}
	}
	if cfg.Expiry < 0 || cfg.LockWindow < 0 || cfg.CacheSize < 0 || cfg.InProgressWait < 0 || cfg.FinalizeTimeout < 0 {
		return nil, errors.New("idempotency: negative duration or size in Config")
	}
	cfg.Expiry = cmp.Or(cfg.Expiry, DefaultExpiry)
	if cfg.Expiry < time.Second {
		return nil, errors.New("idempotency: Config.Expiry must be at least one second (expira_en has second resolution)")
	}
	cfg.FinalizeTimeout = cmp.Or(cfg.FinalizeTimeout, DefaultFinalizeTimeout)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{db: db, cfg: cfg}
	if cfg.CacheSize > 0 {
		s.cache = newLRU(cfg.CacheSize)
	}
	return s, nil
}

// Expiry is how long the store's records live (Config.Expiry after
// defaults): a consumer that refuses messages older than its window checks
// that its records live at least as long.
func (s *Store) Expiry() time.Duration { return s.cfg.Expiry }

// itemKey is the DynamoDB key of key's record.
func (s *Store) itemKey(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{s.cfg.KeyAttribute: attrS(key)}
}

// read returns key's record item by a consistent GetItem (empty when there
// is none), the error unwrapped.
func (s *Store) read(ctx context.Context, key string) (map[string]types.AttributeValue, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.cfg.TableName), Key: s.itemKey(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

// lockExpiry picks caduca_bloqueo for a claim made at now.
func (s *Store) lockExpiry(ctx context.Context, now time.Time) time.Time {
	exp := now.Add(cmp.Or(s.cfg.LockWindow, DefaultLockWindow))
	if dl, ok := ctx.Deadline(); ok {
		// The deadline is wall-clock; measure the remaining time with the
		// real clock and apply it to the store's clock, so that an injected
		// clock stays consistent.
		if byDeadline := now.Add(time.Until(dl)); byDeadline.Before(exp) {
			exp = byDeadline
		}
	}
	return exp
}

// newOwnerToken returns a fencing token unique to one claim. The Lambda
// request id, when there is one, prefixes it so an operator can go from a
// stuck EN_CURSO record to the owner's logs.
func newOwnerToken(ctx context.Context) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	tok := hex.EncodeToString(b[:])
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		tok = lc.AwsRequestID + "/" + tok
	}
	return tok
}

// finalizeContext returns a context for recording the outcome that
// survives the caller's cancellation but not forever.
func (s *Store) finalizeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.cfg.FinalizeTimeout)
}
