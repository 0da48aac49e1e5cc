package breaker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mercadofresco/integration/lambdas/breaker/breakerapi"
)

// Env is what LoadSettings reads; *lambdaenv.Env implements it (an
// interface, so the breaker does not link the SDK configuration).
type Env interface {
	Required(key string) string
	Bool(key string, def bool) bool
	Int(key string, def, min, max int) int
	Duration(key string, def, min, max time.Duration) time.Duration
}

// ErrInvalidAddr is returned by LoadSettings for an address that is not
// host:port.
var ErrInvalidAddr = errors.New("breaker: invalid cache address")

// Settings are a Lambda's breaker settings, read from the variables named
// in breakerapi.
type Settings struct {
	RedisAddr        string
	RedisTLS         bool
	FailureThreshold int
	OpenPeriod       time.Duration
}

// LoadSettings reads the breaker's variables through env (problems are
// recorded in env, and a malformed address is returned as an error).
func LoadSettings(env Env) (Settings, error) {
	s := Settings{
		RedisAddr:        env.Required(breakerapi.EnvRedisAddr),
		RedisTLS:         env.Bool(breakerapi.EnvRedisTLS, true),
		FailureThreshold: env.Int(breakerapi.EnvFailureThreshold, DefaultFailureThreshold, 1, 1000),
		OpenPeriod:       env.Duration(breakerapi.EnvOpenPeriod, DefaultOpenPeriod, 5*time.Second, 10*time.Minute),
	}
	if s.RedisAddr != "" {
		if _, _, err := net.SplitHostPort(s.RedisAddr); err != nil {
			return s, fmt.Errorf("%w: %s: %q is not host:port", ErrInvalidAddr, breakerapi.EnvRedisAddr, s.RedisAddr)
		}
	}
	return s, nil
}

// NewRedisClient returns the client a Lambda's breakers share: TLS when
// useTLS (ElastiCache Serverless requires it), 200 ms dial, read and write
// timeouts and no go-redis retries (a breaker whose store is slow fails
// open instead of delaying the protected call), and a small pool (one
// Lambda instance handles one batch at a time).
func NewRedisClient(addr string, useTLS bool) *redis.Client {
	opts := &redis.Options{
		Addr:         addr,
		DialTimeout:  200 * time.Millisecond,
		ReadTimeout:  200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond,
		MaxRetries:   -1,
		PoolSize:     4,
	}
	if useTLS {
		host, _, _ := net.SplitHostPort(addr)
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	}
	return redis.NewClient(opts)
}
