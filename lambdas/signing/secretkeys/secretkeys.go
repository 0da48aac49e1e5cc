// Package secretkeys reads the charge-signing keys (lambdas/signing) from
// their Secrets Manager secret: the AWSCURRENT version signs, AWSCURRENT
// and AWSPREVIOUS verify, each key named by its version id. Keys are cached
// for TTL; a signature naming a key not held reads the secret again (at
// most once per MinRefreshGap), so a rotation is picked up at once by the
// verifiers and within TTL by the signer (docs/design.md#charge-signature).
package secretkeys

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/mercadofresco/integration/lambdas/signing"
)

// EnvSecretARN is signing.EnvSecretARN.
const EnvSecretARN = signing.EnvSecretARN

// Stages read: the key that signs, and the one before it.
const (
	StageCurrent  = "AWSCURRENT"
	StagePrevious = "AWSPREVIOUS"
)

// TTL is how long keys are served before the secret is read again.
const TTL = 5 * time.Minute

// MinRefreshGap bounds the reads an unknown key id can cause.
const MinRefreshGap = 10 * time.Second

// Getter is the Secrets Manager operation used.
type Getter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Source holds the keys of one secret. Safe for concurrent use.
type Source struct {
	sm  Getter
	id  string
	now func() time.Time

	mu      sync.Mutex
	keys    []signing.Key // current first
	fetched time.Time
}

// New returns the keys of secretID (name or ARN); now nil is time.Now.
func New(sm Getter, secretID string, now func() time.Time) (*Source, error) {
	if sm == nil || secretID == "" {
		return nil, errors.New("secretkeys: a Secrets Manager client and the secret id are required")
	}
	if now == nil {
		now = time.Now
	}
	return &Source{sm: sm, id: secretID, now: now}, nil
}

// Current returns the key that signs (AWSCURRENT).
func (s *Source) Current(ctx context.Context) (signing.Key, error) {
	keys, err := s.load(ctx, false)
	if err != nil {
		return signing.Key{}, err
	}
	return keys[0], nil
}

// Sign signs c with the current key.
func (s *Source) Sign(ctx context.Context, c signing.Charge) (string, error) {
	k, err := s.Current(ctx)
	if err != nil {
		return "", err
	}
	return signing.Sign(k, c)
}

// Verify checks sig against c with the current and previous keys, reading
// the secret again when sig names a key not held. A read failure is
// returned as is (transient); a bad signature wraps signing.ErrInvalid.
func (s *Source) Verify(ctx context.Context, c signing.Charge, sig string) error {
	keys, err := s.load(ctx, false)
	if err != nil {
		return err
	}
	err = signing.Verify(keys, c, sig)
	if !errors.Is(err, signing.ErrUnknownKey) {
		return err
	}
	keys, lerr := s.load(ctx, true)
	if lerr != nil {
		return lerr
	}
	return signing.Verify(keys, c, sig)
}

func (s *Source) load(ctx context.Context, refresh bool) ([]signing.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	age := s.now().Sub(s.fetched)
	if s.keys != nil && age < TTL && (!refresh || age < MinRefreshGap) {
		return s.keys, nil
	}
	cur, err := s.read(ctx, StageCurrent)
	if err != nil {
		return nil, err
	}
	keys := []signing.Key{cur}
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

func (s *Source) read(ctx context.Context, stage string) (signing.Key, error) {
	out, err := s.sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.id), VersionStage: aws.String(stage)})
	if err != nil {
		return signing.Key{}, fmt.Errorf("secretkeys: read %s of %s: %w", stage, s.id, err)
	}
	k := signing.Key{ID: aws.ToString(out.VersionId), Secret: []byte(aws.ToString(out.SecretString))}
	if len(k.Secret) < signing.MinKeyBytes || k.ID == "" {
		return signing.Key{}, fmt.Errorf("secretkeys: %s of %s: %w: %d bytes or no version id", stage, s.id, signing.ErrBadKey, len(k.Secret))
	}
	return k, nil
}
