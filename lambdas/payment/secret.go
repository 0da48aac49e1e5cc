package payment

import (
	"time"

	"github.com/mercadofresco/integration/lambdas/apikey"
)

// The gateway's API key comes from lambdas/apikey, which every HTTP
// dependency of the project shares; these names keep the payment API.
type (
	// SecretsGetter is the part of the Secrets Manager client SecretKey uses.
	SecretsGetter = apikey.SecretsGetter
	// SecretKey is a KeySource reading the gateway API key from Secrets
	// Manager (see apikey.Secret).
	SecretKey = apikey.Secret
	// StaticKey is a KeySource with a fixed key (tests, local runs).
	StaticKey = apikey.Static
)

// DefaultSecretTTL is how long SecretKey serves a key before reading the
// secret again.
const DefaultSecretTTL = apikey.DefaultTTL

// NewSecretKey returns a key source for secretID (name or ARN); ttl 0 means
// DefaultSecretTTL.
func NewSecretKey(sm SecretsGetter, secretID string, ttl time.Duration) *SecretKey {
	return apikey.NewSecret(sm, secretID, ttl)
}
