package signing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
)

// Stages read: the key that signs, and the one before it.
const (
	StageCurrent  = "AWSCURRENT"
	StagePrevious = "AWSPREVIOUS"
)

// KeyTTL is how long keys are served before the secret is read again.
const KeyTTL = 5 * time.Minute

// MinRefreshGap bounds the reads an unknown key id can cause.
const MinRefreshGap = 10 * time.Second

// SecretGetter is the Secrets Manager operation used.
type SecretGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// SecretSource reads the charge-signing keys from their Secrets Manager
// secret, safe for concurrent use: the AWSCURRENT version signs, AWSCURRENT
// and AWSPREVIOUS verify, each key named by its version id. Keys are cached
// for KeyTTL; a signature naming a key not held reads the secret again (at
// most once per MinRefreshGap), so a rotation is picked up at once by the
// verifiers and within KeyTTL by the signer (docs/design.md#charge-signature).
type SecretSource struct {
	sm  SecretGetter
	id  string
	now func() time.Time

	mu      sync.Mutex
	keys    []Key // current first
	fetched time.Time
}

// New returns the keys of secretID (name or ARN); now nil is time.Now.
func NewSecretSource(sm SecretGetter, secretID string, now func() time.Time) (*SecretSource, error) {
	if sm == nil || secretID == "" {
		return nil, errors.New("secretkeys: a Secrets Manager client and the secret id are required")
	}
	if now == nil {
		now = time.Now
	}
	return &SecretSource{sm: sm, id: secretID, now: now}, nil
}

// Current returns the key that signs (AWSCURRENT).
func (s *SecretSource) Current(ctx context.Context) (Key, error) {
	keys, err := s.load(ctx, false)
	if err != nil {
		return Key{}, err
	}
	return keys[0], nil
}

// Sign signs c with the current key.
func (s *SecretSource) Sign(ctx context.Context, c Charge) (string, error) {
	k, err := s.Current(ctx)
	if err != nil {
		return "", err
	}
	return Sign(k, c)
}

// Verify checks sig against c with the current and previous keys, reading
// the secret again when sig names a key not held. A read failure is
// returned as is (transient); a bad signature wraps ErrInvalid.
func (s *SecretSource) Verify(ctx context.Context, c Charge, sig string) error {
	keys, err := s.load(ctx, false)
	if err != nil {
		return err
	}
	err = Verify(keys, c, sig)
	if !errors.Is(err, ErrUnknownKey) {
		return err
	}
	keys, lerr := s.load(ctx, true)
	if lerr != nil {
		return lerr
	}
	return Verify(keys, c, sig)
}

func (s *SecretSource) load(ctx context.Context, refresh bool) ([]Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	age := s.now().Sub(s.fetched)
	if s.keys != nil && age < KeyTTL && (!refresh || age < MinRefreshGap) {
		return s.keys, nil
	}
	cur, err := s.read(ctx, StageCurrent)
	if err != nil {
		return nil, err
	}
	keys := []Key{cur}
	prev, err := s.read(ctx, StagePrevious)
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf): // never rotated: no previous version
	case err != nil:
		return nil, err
	case prev.ID != cur.ID:
		keys = append(keys, prev)
	}
	s.keys, s.fetched = keys, s.now()
	return keys, nil
}

func (s *SecretSource) read(ctx context.Context, stage string) (Key, error) {
	out, err := s.sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.id), VersionStage: aws.String(stage)})
	if err != nil {
		return Key{}, fmt.Errorf("secretkeys: read %s of %s: %w", stage, s.id, err)
	}
	k := Key{ID: aws.ToString(out.VersionId), Secret: []byte(aws.ToString(out.SecretString))}
	if len(k.Secret) < MinKeyBytes || k.ID == "" {
		return Key{}, fmt.Errorf("secretkeys: %s of %s: %w: %d bytes or no version id", stage, s.id, ErrBadKey, len(k.Secret))
	}
	return k, nil
}
