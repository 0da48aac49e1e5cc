package httpdep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// KeySource provides an API key.
type KeySource interface {
	// APIKey returns the current key (cached).
	APIKey(ctx context.Context) (string, error)
	// Refresh discards the cached key and returns a fresh one (after a 401).
	Refresh(ctx context.Context) (string, error)
}

// SecretsGetter is the part of the Secrets Manager client SecretKey uses.
type SecretsGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// DefaultKeyTTL is how long a SecretKey serves a key before reading the secret
// again, so a rotation is picked up even without a 401.
const DefaultKeyTTL = time.Hour

// keyRefreshGap stops concurrent 401s from each forcing a read: a refresh
// within this gap of the previous read returns that read's key.
const keyRefreshGap = time.Second

// SecretKey is a KeySource reading the key from Secrets Manager: cached,
// and read again when the dependency refuses it (HTTP 401, after a
// rotation). The secret holds the key as a plain string or a JSON document
// with an "api_key" field (the shape a rotation Lambda usually writes).
// Safe for concurrent use.
type SecretKey struct {
	sm  SecretsGetter
	id  string
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	key     string
	fetched time.Time
}

// NewSecret returns a key source for secretID (name or ARN); ttl 0 means
// DefaultKeyTTL.
func NewSecretKey(sm SecretsGetter, secretID string, ttl time.Duration) *SecretKey {
	if ttl <= 0 {
		ttl = DefaultKeyTTL
	}
	return &SecretKey{sm: sm, id: secretID, ttl: ttl, now: time.Now}
}

// WithClock makes the cache use now instead of the wall clock (tests).
func (s *SecretKey) WithClock(now func() time.Time) *SecretKey {
	s.now = now
	return s
}

// APIKey implements KeySource.
func (s *SecretKey) APIKey(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != "" && s.now().Sub(s.fetched) < s.ttl {
		return s.key, nil
	}
	return s.fetchLocked(ctx)
}

// Refresh implements KeySource.
func (s *SecretKey) Refresh(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != "" && s.now().Sub(s.fetched) < keyRefreshGap {
		return s.key, nil
	}
	return s.fetchLocked(ctx)
}

func (s *SecretKey) fetchLocked(ctx context.Context) (string, error) {
	out, err := s.sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.id)})
	if err != nil {
		return "", fmt.Errorf("apikey: read secret %s: %w", s.id, err)
	}
	key, err := ParseKey(aws.ToString(out.SecretString))
	if err != nil {
		return "", fmt.Errorf("apikey: secret %s: %w", s.id, err)
	}
	s.key, s.fetched = key, s.now()
	return key, nil
}

// ParseKey is the API key a secret value holds: the value itself, or its
// "api_key" field when it is JSON.
func ParseKey(v string) (string, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "{") {
		var doc struct {
			APIKey string `json:"api_key"`
		}
		if err := json.Unmarshal([]byte(v), &doc); err != nil {
			return "", fmt.Errorf("JSON secret: %w", err)
		}
		v = strings.TrimSpace(doc.APIKey)
	}
	if v == "" {
		return "", errors.New(`empty API key (want a string or {"api_key": "..."})`)
	}
	return v, nil
}

// StaticKey is a KeySource with a fixed key (tests, local runs).
type StaticKey string

// APIKey implements KeySource.
func (k StaticKey) APIKey(context.Context) (string, error) { return string(k), nil }

// Refresh implements KeySource.
func (k StaticKey) Refresh(context.Context) (string, error) { return string(k), nil }
