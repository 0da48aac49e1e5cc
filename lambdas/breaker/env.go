package breaker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/redis/go-redis/v9"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
)

// Env is what LoadSettings reads; *lambdaenv.Env implements it (an
// interface, so the breaker does not link the SDK configuration).
type Env interface {
	Required(key string) string
	String(key, def string) string
	Bool(key string, def bool) bool
	Int(key string, def, min, max int) int
	Duration(key string, def, min, max time.Duration) time.Duration
}

// ErrInvalidAddr is returned by LoadSettings for an address that is not
// host:port.
var ErrInvalidAddr = errors.New("breaker: invalid cache address")

// ErrIAMWithoutTLS is returned by LoadSettings for a user to authenticate
// with IAM on a connection without TLS (ElastiCache refuses it).
var ErrIAMWithoutTLS = errors.New("breaker: IAM authentication needs TLS")

// Settings are a Lambda's breaker settings, read from the variables named
// in lambdaapi.
type Settings struct {
	RedisAddr string
	RedisTLS  bool
	// User is the ElastiCache user to authenticate as with IAM, on the
	// serverless cache CacheName ("": no AUTH).
	User, CacheName  string
	FailureThreshold int
	OpenPeriod       time.Duration
}

// LoadSettings reads the breaker's variables through env (problems are
// recorded in env, and a malformed address or IAM without TLS is returned
// as an error).
func LoadSettings(env Env) (Settings, error) {
	s := Settings{
		RedisAddr:        env.Required(lambdaapi.EnvBreakerRedisAddr),
		RedisTLS:         env.Bool(lambdaapi.EnvBreakerRedisTLS, true),
		User:             env.String(lambdaapi.EnvBreakerRedisUser, ""),
		FailureThreshold: env.Int(lambdaapi.EnvBreakerFailureThreshold, DefaultFailureThreshold, 1, 1000),
		OpenPeriod:       env.Duration(lambdaapi.EnvBreakerOpenPeriod, DefaultOpenPeriod, 5*time.Second, 10*time.Minute),
	}
	var problems []error
	if s.User != "" {
		s.CacheName = env.Required(lambdaapi.EnvBreakerCacheName)
		if !s.RedisTLS {
			problems = append(problems, fmt.Errorf("%w: %s is set and %s is false", ErrIAMWithoutTLS, lambdaapi.EnvBreakerRedisUser, lambdaapi.EnvBreakerRedisTLS))
		}
	}
	if s.RedisAddr != "" {
		if _, _, err := net.SplitHostPort(s.RedisAddr); err != nil {
			problems = append(problems, fmt.Errorf("%w: %s: %q is not host:port", ErrInvalidAddr, lambdaapi.EnvBreakerRedisAddr, s.RedisAddr))
		}
	}
	return s, errors.Join(problems...)
}

// IAMAuth returns the IAM authentication of s.User signed with cfg's
// credentials in cfg's region, or nil when s names no user.
func (s Settings) IAMAuth(cfg aws.Config) *IAMAuth {
	if s.User == "" {
		return nil
	}
	return &IAMAuth{UserID: s.User, CacheName: s.CacheName, Region: cfg.Region, Credentials: cfg.Credentials}
}

// Cache is a Lambda's breaker cache: one Redis client (NewRedisClient)
// shared by the breakers of every dependency, their metrics on standard
// output for one environment (MetricsWriter).
type Cache struct {
	s           Settings
	rdb         *redis.Client
	environment string
	log         *slog.Logger
}

// Open returns the cache s names, authenticated with cfg's credentials
// when s names a user (IAMAuth).
func (s Settings) Open(cfg aws.Config, environment string, log *slog.Logger) *Cache {
	return &Cache{s: s, rdb: NewRedisClient(s.RedisAddr, s.RedisTLS, s.IAMAuth(cfg)), environment: environment, log: log}
}

// Metrics is the metrics writer of dependency name.
func (c *Cache) Metrics(name string) *metrics.Writer {
	return MetricsWriter(os.Stdout, c.environment, name)
}

// Breaker returns the circuit breaker of dependency name, with the
// settings' failure threshold and open period. probeLease should exceed
// the protected call's worst case.
func (c *Cache) Breaker(name string, probeLease time.Duration) (*Breaker, error) {
	return New(NewRedisStore(c.rdb), Config{Name: name, FailureThreshold: c.s.FailureThreshold, OpenPeriod: c.s.OpenPeriod,
		ProbeLease: probeLease, Metrics: c.Metrics(name), Logger: c.log})
}

// ConnMaxLifetime retires a pooled connection after an hour: ElastiCache
// closes an IAM-authenticated connection after 12 hours, and a breaker
// call on a connection closed under it would fail open once.
const ConnMaxLifetime = time.Hour

// NewRedisClient returns the client a Lambda's breakers share: TLS when
// useTLS (ElastiCache Serverless requires it), authenticated with a fresh
// IAM token on every new connection when auth is not nil, 200 ms dial, read
// and write timeouts and no go-redis retries (a breaker whose store is slow
// fails open instead of delaying the protected call), and a small pool (one
// Lambda instance handles one batch at a time).
func NewRedisClient(addr string, useTLS bool, auth *IAMAuth) *redis.Client {
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
	if auth != nil {
		opts.CredentialsProviderContext = func(ctx context.Context) (string, string, error) {
			token, err := auth.Token(ctx)
			return auth.UserID, token, err
		}
		opts.ConnMaxLifetime = ConnMaxLifetime
	}
	return redis.NewClient(opts)
}
