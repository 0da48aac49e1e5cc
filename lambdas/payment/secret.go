package payment

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

// SecretsGetter is the part of the Secrets Manager client SecretKey uses.
type SecretsGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// DefaultSecretTTL is how long SecretKey serves a key before reading the
// secret again, so a rotation is picked up even without a 401.
const DefaultSecretTTL = time.Hour

// minRefreshGap stops concurrent 401s from each forcing a read: a refresh
// within this gap of the previous read returns that read's key.
const minRefreshGap = time.Second

// SecretKey is a KeySource reading the gateway API key from Secrets Manager:
// the secret is a plain string, or JSON with an "api_key" field. The key is
// cached for TTL and read again on Refresh (the client calls it on a 401).
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

// NewSecretKey returns a key source for secretID (name or ARN); ttl 0 means
// DefaultSecretTTL.
func NewSecretKey(sm SecretsGetter, secretID string, ttl time.Duration) *SecretKey {
	if ttl <= 0 {
		ttl = DefaultSecretTTL
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
	if s.key != "" && s.now().Sub(s.fetched) < minRefreshGap {
		return s.key, nil
	}
	return s.fetchLocked(ctx)
}

func (s *SecretKey) fetchLocked(ctx context.Context) (string, error) {
	out, err := s.sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.id)})
	if err != nil {
		return "", fmt.Errorf("payment: read secret %s: %w", s.id, err)
	}
	key, err := parseSecret(aws.ToString(out.SecretString))
	if err != nil {
		return "", fmt.Errorf("payment: secret %s: %w", s.id, err)
	}
	s.key, s.fetched = key, s.now()
	return key, nil
}

func parseSecret(v string) (string, error) {
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
