// Package apikey supplies the API keys of the project's HTTP dependencies
// (payment gateway, warehouse, ERP, secondary e-mail provider): read from
// AWS Secrets Manager, cached, and read again when the dependency refuses
// the key (HTTP 401, after a rotation).
//
// A secret holds either the key as a plain string or a JSON document with
// an "api_key" field (the shape a rotation Lambda usually writes).
package apikey

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

// Source provides an API key.
type Source interface {
	// APIKey returns the current key (cached).
	APIKey(ctx context.Context) (string, error)
	// Refresh discards the cached key and returns a fresh one (after a 401).
	Refresh(ctx context.Context) (string, error)
}

// SecretsGetter is the part of the Secrets Manager client Secret uses.
type SecretsGetter interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// DefaultTTL is how long a Secret serves a key before reading the secret
// again, so a rotation is picked up even without a 401.
const DefaultTTL = time.Hour

// minRefreshGap stops concurrent 401s from each forcing a read: a refresh
// within this gap of the previous read returns that read's key.
const minRefreshGap = time.Second

// Secret is a Source reading the key from Secrets Manager. Safe for
// concurrent use.
type Secret struct {
	sm  SecretsGetter
	id  string
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	key     string
	fetched time.Time
}

// NewSecret returns a key source for secretID (name or ARN); ttl 0 means
// DefaultTTL.
func NewSecret(sm SecretsGetter, secretID string, ttl time.Duration) *Secret {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Secret{sm: sm, id: secretID, ttl: ttl, now: time.Now}
}

// WithClock makes the cache use now instead of the wall clock (tests).
func (s *Secret) WithClock(now func() time.Time) *Secret {
	s.now = now
	return s
}

// APIKey implements Source.
func (s *Secret) APIKey(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != "" && s.now().Sub(s.fetched) < s.ttl {
		return s.key, nil
	}
	return s.fetchLocked(ctx)
}

// Refresh implements Source.
func (s *Secret) Refresh(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != "" && s.now().Sub(s.fetched) < minRefreshGap {
		return s.key, nil
	}
	return s.fetchLocked(ctx)
}

func (s *Secret) fetchLocked(ctx context.Context) (string, error) {
	out, err := s.sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.id)})
	if err != nil {
		return "", fmt.Errorf("apikey: read secret %s: %w", s.id, err)
	}
	key, err := parse(aws.ToString(out.SecretString))
	if err != nil {
		return "", fmt.Errorf("apikey: secret %s: %w", s.id, err)
	}
	s.key, s.fetched = key, s.now()
	return key, nil
}

func parse(v string) (string, error) {
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

// Static is a Source with a fixed key (tests, local runs).
type Static string

// APIKey implements Source.
func (k Static) APIKey(context.Context) (string, error) { return string(k), nil }

// Refresh implements Source.
func (k Static) Refresh(context.Context) (string, error) { return string(k), nil }
