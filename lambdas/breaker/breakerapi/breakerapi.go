// Package breakerapi names what the circuit breaker (lambdas/breaker)
// emits and reads, for the CDK constructs that build its alarms and set its
// environment, and the keys it writes with the access string that admits
// only them (AccessString: the ElastiCache user of each function and the
// tests' Redis ACL users are made from it). It depends on the standard
// library only, so constructs can import it without linking go-redis or
// any Lambda dependency. docs/design.md#breaker-auth.
package breakerapi

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Metrics, in namespace MercadoFresco/Tienda (metricsapi.Namespace),
// with the dimensions DimensionEnvironment ("Entorno", from
// lambdas/metrics) and DimensionDependency. All are Count metrics emitted
// in CloudWatch Embedded Metric Format.
const (
	// MetricOpened is 1 for every transition of a circuit to open (after
	// FailureThreshold consecutive failures, or a failed probe). It is
	// emitted once per transition across all Lambda instances: by the
	// instance whose recorded failure opened it. Alarm: Sum > 0 over 1
	// minute, to alertas-mercadofresco.
	MetricOpened = "CircuitoAbierto"
	// MetricClosed is 1 when a successful probe closes the circuit.
	MetricClosed = "CircuitoCerrado"
	// MetricStoreErrors counts calls to Valkey that failed (the breaker then
	// fails open: it behaves as closed). A sustained value means the
	// breaker is off.
	MetricStoreErrors = "CircuitoErroresAlmacen"

	// DimensionDependency names the protected dependency ("pasarela", ...).
	DimensionDependency = "Dependencia"
)

// Environment variables read by the Lambda mains that use a breaker.
const (
	// EnvRedisAddr is the Valkey endpoint host:port of mercadofresco-catalogo
	// (required).
	EnvRedisAddr = "BREAKER_REDIS_ADDR"
	// EnvRedisTLS is "true" (default) to connect with TLS, as ElastiCache
	// Serverless requires.
	EnvRedisTLS = "BREAKER_REDIS_TLS"
	// EnvRedisUser is the ElastiCache user (its id, equal to its name) the
	// function authenticates as with an IAM token. Unset: no AUTH (a local
	// Redis).
	EnvRedisUser = "BREAKER_REDIS_USER"
	// EnvCacheName is the serverless cache's name, the host the IAM token
	// is signed for (required with EnvRedisUser).
	EnvCacheName = "BREAKER_CACHE_NAME"
	// EnvFailureThreshold overrides the consecutive failures that open the
	// circuit (default 20).
	EnvFailureThreshold = "BREAKER_FAILURE_THRESHOLD"
	// EnvOpenPeriod overrides how long the circuit stays open before a probe
	// (Go duration, default 30s).
	EnvOpenPeriod = "BREAKER_OPEN_PERIOD"
)

// DefaultKeyPrefix namespaces the breakers' keys in the cache.
const DefaultKeyPrefix = "mf:breaker:"

// Key is the key of dependency's circuit under prefix: prefix + "{" +
// dependency + "}" (the braces make it its own cluster hash slot).
func Key(prefix, dependency string) string { return prefix + "{" + dependency + "}" }

// Commands are all a breaker's user may run: EVALSHA, EVAL (when the
// server does not hold the script yet) and the commands the scripts call
// (lambdas/breaker store.go). AUTH and HELLO need no permission.
var Commands = []string{"evalsha", "eval", "hmget", "hget", "hset", "hincrby", "hdel", "pexpire"}

// NoAccess is the access string of a user that can neither authenticate
// nor run anything: the cache's "default" user, the one unauthenticated
// connections would be.
const NoAccess = "off -@all"

// ErrAccessString is returned by AccessString for a prefix or dependency
// it cannot write into an access string.
var ErrAccessString = errors.New("breakerapi: invalid access string")

// AccessString is the access string (ElastiCache RBAC, Redis ACL rules) of
// a user that may run the breakers of dependencies under prefix and
// nothing else: "on", one key pattern per circuit (Key, glob characters
// escaped), no other key, -@all and Commands.
func AccessString(prefix string, dependencies ...string) (string, error) {
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
			parts = append(parts, "~"+globEscape(Key(prefix, d)))
		}
	}
	if len(problems) > 0 {
		return "", errors.Join(problems...)
	}
	parts = append(parts, "-@all")
	for _, c := range Commands {
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
