package lambdaapi

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// The circuit breaker's metrics (lambdas/breaker), Count metrics with the
// dimensions Entorno and DimensionDependency.
const (
	// MetricBreakerOpened is 1 for every transition of a circuit to open
	// (after the failure threshold, or a failed probe), emitted once across
	// all Lambda instances: by the one whose recorded failure opened it.
	// Alarm: Sum > 0 over 1 minute, to alertas-mercadofresco.
	MetricBreakerOpened = "CircuitoAbierto"
	// MetricBreakerClosed is 1 when a successful probe closes the circuit.
	MetricBreakerClosed = "CircuitoCerrado"
	// MetricBreakerStoreErrors counts calls to Valkey that failed (the
	// breaker then fails open: it behaves as closed). A sustained value
	// means the breaker is off.
	MetricBreakerStoreErrors = "CircuitoErroresAlmacen"

	// DimensionDependency names the protected dependency ("pasarela", ...).
	DimensionDependency = "Dependencia"
)

// Environment variables of the functions that use a breaker.
const (
	// EnvBreakerRedisAddr is the Valkey endpoint host:port of
	// mercadofresco-catalogo (required).
	EnvBreakerRedisAddr = "BREAKER_REDIS_ADDR"
	// EnvBreakerRedisTLS is "true" (default) to connect with TLS, as
	// ElastiCache Serverless requires.
	EnvBreakerRedisTLS = "BREAKER_REDIS_TLS"
	// EnvBreakerRedisUser is the ElastiCache user (its id, equal to its
	// name) the function authenticates as with an IAM token. Unset: no AUTH
	// (a local Redis).
	EnvBreakerRedisUser = "BREAKER_REDIS_USER"
	// EnvBreakerCacheName is the serverless cache's name, the host the IAM
	// token is signed for (required with EnvBreakerRedisUser).
	EnvBreakerCacheName = "BREAKER_CACHE_NAME"
	// EnvBreakerFailureThreshold overrides the consecutive failures that
	// open the circuit (default 20).
	EnvBreakerFailureThreshold = "BREAKER_FAILURE_THRESHOLD"
	// EnvBreakerOpenPeriod overrides how long the circuit stays open before
	// a probe (Go duration, default 30s).
	EnvBreakerOpenPeriod = "BREAKER_OPEN_PERIOD"
)

// BreakerKeyPrefix namespaces the breakers' keys in the cache.
const BreakerKeyPrefix = "mf:breaker:"

// BreakerKey is the key of dependency's circuit under prefix: prefix + "{"
// + dependency + "}" (the braces make it its own cluster hash slot).
func BreakerKey(prefix, dependency string) string { return prefix + "{" + dependency + "}" }

// BreakerCommands are all a breaker's user may run: EVALSHA, EVAL (when the
// server does not hold the script yet) and the commands the scripts call
// (lambdas/breaker store.go). AUTH and HELLO need no permission.
var BreakerCommands = []string{"evalsha", "eval", "hmget", "hget", "hset", "hincrby", "hdel", "pexpire"}

// CacheNoAccess is the access string of a user that can neither
// authenticate nor run anything: the cache's "default" user, the one
// unauthenticated connections would be.
const CacheNoAccess = "off -@all"

// ErrAccessString is returned by BreakerAccessString for a prefix or
// dependency it cannot write into an access string.
var ErrAccessString = errors.New("lambdaapi: invalid access string")

// BreakerAccessString is the access string (ElastiCache RBAC, Redis ACL
// rules) of a user that may run the breakers of dependencies under prefix
// and nothing else: "on", one key pattern per circuit (BreakerKey, glob
// characters escaped), no other key, -@all and BreakerCommands
// (docs/design.md#breaker-auth).
func BreakerAccessString(prefix string, dependencies ...string) (string, error) {
	var problems []error
	if len(dependencies) == 0 {
		problems = append(problems, fmt.Errorf("%w: no dependency", ErrAccessString))
	}
	if strings.ContainsFunc(prefix, unicode.IsSpace) {
		problems = append(problems, fmt.Errorf("%w: prefix %q has white space", ErrAccessString, prefix))
	}
	parts := []string{"on"}
	seen := map[string]bool{}
	for _, d := range dependencies {
		switch {
		case d == "" || strings.ContainsFunc(d, unicode.IsSpace) || strings.ContainsAny(d, "{}"):
			problems = append(problems, fmt.Errorf("%w: dependency %q is empty or has white space or braces", ErrAccessString, d))
		case !seen[d]:
			seen[d] = true
			parts = append(parts, "~"+globEscape(BreakerKey(prefix, d)))
		}
	}
	if len(problems) > 0 {
		return "", errors.Join(problems...)
	}
	parts = append(parts, "-@all")
	for _, c := range BreakerCommands {
		parts = append(parts, "+"+c)
	}
	return strings.Join(parts, " "), nil
}

// globEscape makes s match only itself as a key pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
