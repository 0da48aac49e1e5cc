package lambdatest

import (
	"context"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/redis/go-redis/v9"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Dependency is a Service standing in for a third-party HTTP API
// (Idempotency-Key replay, fault injection, ledgers of requests and of
// effects with their headers).
type Dependency struct{ *localaws.Service }

// NewDependency starts a Dependency running h, closed when the test ends.
func NewDependency(t testing.TB, h localaws.ServiceHandler, opts ...localaws.ServiceOption) *Dependency {
	t.Helper()
	d := &Dependency{localaws.NewService(h, opts...)}
	t.Cleanup(d.Close)
	return d
}

// BreakerCache is a private redis-server standing in for the Valkey cache
// of the breakers.
type BreakerCache struct {
	srv   *localaws.Redis
	admin *redis.Client // the test's one connection
	// before is the server's accepted connections once set up: every
	// later one is the function's (admin's stays open).
	before int
}

// NewBreakerCache starts a TLS-only server and points env's
// BREAKER_REDIS_ADDR at it as "localhost:<port>"; the function keeps the
// template's TLS and verifies the server's certificate, trusted through
// SSL_CERT_FILE (a Lambda trusts ElastiCache's through the system roots).
// When env names a BREAKER_REDIS_USER, the server gets that user with the
// AccessString the committed Network template gives it, so the function's
// breakers run only on the keys the deployed user admits. The user takes
// any password ("nopass"): the IAM token's format is lambdas/breaker's
// test; here the name and the access string are proved. A private server,
// so the breakers' fixed key prefix collides with no other test.
func NewBreakerCache(t testing.TB, env map[string]string) *BreakerCache {
	t.Helper()
	srv := localaws.StartRedisTLS(t)
	_, port, _ := net.SplitHostPort(srv.Addr)
	env["BREAKER_REDIS_ADDR"] = net.JoinHostPort("localhost", port)
	t.Setenv("SSL_CERT_FILE", localaws.ServerCert)
	if user := env["BREAKER_REDIS_USER"]; user != "" {
		envName := env["ENTORNO"]
		if envName == "" {
			envName = "prod"
		}
		access := ""
		for _, r := range app(t, envName).Resources("AWS::ElastiCache::User") {
			if name, _ := r.Prop("UserName").(string); name == user {
				access, _ = r.Prop("AccessString").(string)
			}
		}
		if access == "" {
			t.Fatalf("lambdatest: no ElastiCache user %s with an AccessString in the %s templates", user, envName)
		}
		args := []any{"ACL", "SETUSER", user, "reset", "nopass"}
		for _, rule := range strings.Fields(access) {
			args = append(args, rule)
		}
		if err := srv.Client(t).Do(context.Background(), args...).Err(); err != nil {
			t.Fatalf("lambdatest: ACL SETUSER %s %s: %v", user, access, err)
		}
	}
	c := &BreakerCache{srv: srv, admin: srv.Client(t)}
	c.before = c.stat(t, "stats", "total_connections_received")
	return c
}

// ScriptCalls is how many scripts (EVALSHA and EVAL, the breaker's
// operations) the server has run.
func (c *BreakerCache) ScriptCalls(t testing.TB) int {
	t.Helper()
	info, err := c.admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		v, _ := strconv.Atoi(calls)
		n += v
	}
	return n
}

// WantPost fails the test unless d saw exactly one request, a POST of path
// whose Idempotency-Key and body name pedidoID, authorised with
// "Bearer "+apiKey.
func (d *Dependency) WantPost(t testing.TB, path, pedidoID, apiKey string) localaws.Effect {
	t.Helper()
	seen := d.Effects()
	if len(seen) != 1 {
		t.Fatalf("the dependency saw %d requests, want 1", len(seen))
	}
	r := seen[0]
	if r.Method != http.MethodPost || r.Path != path || !strings.Contains(r.IdempotencyKey, pedidoID) ||
		r.Header.Get("Authorization") != "Bearer "+apiKey || !strings.Contains(string(r.Body), `"pedido_id":"`+pedidoID+`"`) {
		t.Fatalf("request %s %s key %q auth %q body %s, want POST %s keyed by %s with API key %q",
			r.Method, r.Path, r.IdempotencyKey, r.Header.Get("Authorization"), r.Body, path, pedidoID, apiKey)
	}
	return r
}

// WantReached fails the test unless a breaker reached the cache: it ran a
// script there or, when none ran, it opened a connection. The breaker's
// 200 ms timeouts make it fail open on a loaded machine (a TLS handshake
// and an IAM token can take longer there): a connection is then the proof,
// and the test says so. A client that does nothing opens none.
func (c *BreakerCache) WantReached(t testing.TB) {
	t.Helper()
	if c.ScriptCalls(t) > 0 {
		return
	}
	// A loaded server registers a connection the client already gave up on
	// a little later: wait for it, at most 5 s.
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if n := c.stat(t, "stats", "total_connections_received") - c.before; n > 0 {
			t.Logf("the breaker connected to the cache %d time(s) but ran no script: it timed out and failed open (a loaded machine)", n)
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no breaker reached the cache")
		}
		<-tick.C
	}
}

// stat is the integer field of the server's INFO section.
func (c *BreakerCache) stat(t testing.TB, section, field string) int {
	t.Helper()
	info, err := c.admin.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}
