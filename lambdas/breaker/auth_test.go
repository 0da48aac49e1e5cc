package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/retry"
	"github.com/redis/go-redis/v9"
)

// aclRun is one run's ACL users on a Redis 7, named and prefixed uniquely
// (pid and clock), deleted when the test ends.
type aclRun struct {
	srv    *localaws.Redis
	admin  *redis.Client
	prefix string
	tag    string
}

func newACLRun(t *testing.T) *aclRun {
	t.Helper()
	srv := localaws.StartRedis(t)
	tag := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	return &aclRun{srv: srv, admin: srv.Client(t), prefix: "test:acl:" + tag + ":", tag: tag}
}

// user creates the ACL user name with password and the access string of
// dependencies (the one lambdaapi.BreakerAccessString writes for the ElastiCache
// users), and returns a client authenticated as it.
func (r *aclRun) user(t *testing.T, name, password string, dependencies ...string) (*redis.Client, string) {
	t.Helper()
	access, err := lambdaapi.BreakerAccessString(r.prefix, dependencies...)
	if err != nil {
		t.Fatal(err)
	}
	r.setUser(t, name, password, access)
	c := redis.NewClient(&redis.Options{Addr: r.srv.Addr, Username: name, Password: password, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c, access
}

func (r *aclRun) setUser(t *testing.T, name, password, access string) {
	t.Helper()
	ctx := context.Background()
	args := []any{"ACL", "SETUSER", name, "reset", ">" + password}
	for _, rule := range strings.Fields(access) {
		args = append(args, rule)
	}
	if err := r.admin.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s %s: %v", name, access, err)
	}
	t.Cleanup(func() { r.admin.Do(context.Background(), "ACL", "DELUSER", name) })
}

func isNoPerm(err error) bool { return redis.IsPermissionError(err) }

// exercise runs b through every script (Acquire, Record to open, the probe's
// Settle to close) and fails the test on any store error.
func exercise(t *testing.T, b *breaker.Breaker, clk *retry.VirtualClock) {
	t.Helper()
	ctx := context.Background()
	for range 3 {
		if err := b.Do(ctx, fail); !errors.Is(err, errDown) {
			t.Fatalf("call while closed: %v", err)
		}
	}
	if err := b.Do(ctx, ok); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("call after 3 failures: %v, want the circuit open", err)
	}
	clk.Advance(breaker.DefaultOpenPeriod + time.Second)
	if err := b.Do(ctx, ok); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if err := b.Do(ctx, ok); err != nil { // closed: no second probe (Stats below)
		t.Fatalf("call after a good probe: %v", err)
	}
	if st := b.Stats(); st.StoreErrors != 0 || st.Opened != 1 || st.Probes != 1 {
		t.Fatalf("stats %+v: every script must run under the user's access string", st)
	}
}

// TestBreakerUsersWriteOnlyTheirOwnCircuit: the payment user runs its
// gateway breaker through every script, and cannot write the warehouse
// consumer's circuit (NOPERM, the consumer's state untouched); the same the
// other way round. Each run's users and keys are its own.
func TestBreakerUsersWriteOnlyTheirOwnCircuit(t *testing.T) {
	r := newACLRun(t)
	ctx := context.Background()
	payment, paymentAccess := r.user(t, "cobro-"+r.tag, "p-"+r.tag, "pasarela")
	consumer, _ := r.user(t, "preparar-pedido-"+r.tag, "c-"+r.tag, "almacen")
	if strings.Contains(paymentAccess, "~*") || !strings.Contains(paymentAccess, "~"+r.prefix+"{pasarela}") {
		t.Fatalf("payment access string %q", paymentAccess)
	}
	t.Cleanup(func() {
		r.admin.Del(context.Background(), lambdaapi.BreakerKey(r.prefix, "pasarela"), lambdaapi.BreakerKey(r.prefix, "almacen"))
	})
	for _, tc := range []struct {
		name         string
		own, other   *redis.Client
		mine, theirs string
	}{
		{"payment", payment, consumer, "pasarela", "almacen"},
		{"consumer", consumer, payment, "almacen", "pasarela"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := retry.NewVirtualClock(t0)
			b, err := breaker.New(breaker.NewRedisStore(tc.own), breaker.Config{Name: tc.mine, KeyPrefix: r.prefix,
				FailureThreshold: 3, Now: clk.Now, StoreTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			exercise(t, b, clk)
			// EVAL (the first run of a script on a server without it) is
			// admitted too.
			if err := tc.own.Eval(ctx, "return redis.call('HGET', KEYS[1], 's')", []string{b.Key()}).Err(); err != nil {
				t.Fatalf("EVAL on its own key: %v", err)
			}

			theirs := lambdaapi.BreakerKey(r.prefix, tc.theirs)
			before := r.admin.HGetAll(ctx, theirs).Val()
			store := breaker.NewRedisStore(tc.own)
			p := breaker.Params{Threshold: 1, OpenPeriod: time.Minute, ProbeLease: time.Minute, RetryWindow: time.Minute}
			if _, err := store.Record(ctx, theirs, true, true, t0, p); !isNoPerm(err) {
				t.Errorf("Record on %s's circuit: %v, want NOPERM", tc.theirs, err)
			}
			if _, err := store.Acquire(ctx, theirs, "x", false, t0, p); !isNoPerm(err) {
				t.Errorf("Acquire on %s's circuit: %v, want NOPERM", tc.theirs, err)
			}
			for _, cmd := range [][]any{
				{"HSET", theirs, "s", "1"}, {"DEL", theirs}, {"SET", r.prefix + "other", "1"},
				{"GET", b.Key()}, {"KEYS", "*"}, {"FLUSHALL"}, {"CONFIG", "GET", "*"}, {"ACL", "LIST"},
			} {
				if err := tc.own.Do(ctx, cmd...).Err(); !isNoPerm(err) {
					t.Errorf("%v: %v, want NOPERM", cmd, err)
				}
			}
			if after := r.admin.HGetAll(ctx, theirs).Val(); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("%s's circuit changed: %v -> %v", tc.theirs, before, after)
			}
		})
	}
}

// TestNoAccessUserCannotAuthenticate: the default user's access string
// refuses every connection that names it, whatever the password.
func TestNoAccessUserCannotAuthenticate(t *testing.T) {
	r := newACLRun(t)
	name := "default-" + r.tag
	r.setUser(t, name, "any-"+r.tag, lambdaapi.CacheNoAccess)
	c := redis.NewClient(&redis.Options{Addr: r.srv.Addr, Username: name, Password: "any-" + r.tag, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Fatal("a user with the no-access string authenticated")
	}
}

var (
	tokenClock = time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)
	tokenCreds = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
)

// TestIAMTokenFormat: with fixed credentials and clock the token is the
// presigned connect request of the user on the cache (lower case), for 900
// seconds, with the session token, and the same inputs sign the same token.
func TestIAMTokenFormat(t *testing.T) {
	a := &breaker.IAMAuth{UserID: "mf-cobro-dev", CacheName: "MercadoFresco-Catalogo-Dev", Region: "eu-west-1",
		Credentials: tokenCreds, Now: func() time.Time { return tokenClock }}
	tok, err := a.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(tok, "http") {
		t.Fatalf("token %s keeps its scheme", tok)
	}
	u, err := url.Parse("http://" + tok)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != "mercadofresco-catalogo-dev" || u.Path != "/" {
		t.Fatalf("token for %s%s, want mercadofresco-catalogo-dev/", u.Host, u.Path)
	}
	q := u.Query()
	for k, want := range map[string]string{
		"Action": "connect", "User": "mf-cobro-dev", "ResourceType": "ServerlessCache",
		"X-Amz-Expires": "900", "X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Date": "20261202T030405Z",
		"X-Amz-Credential": "AKIDEXAMPLE/20261202/eu-west-1/elasticache/aws4_request", "X-Amz-SignedHeaders": "host",
		"X-Amz-Security-Token": "session-token",
	} {
		if got := q.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if len(q.Get("X-Amz-Signature")) != 64 {
		t.Errorf("signature %q", q.Get("X-Amz-Signature"))
	}
	again, _ := a.Token(context.Background())
	if again != tok {
		t.Error("the same inputs signed two tokens")
	}
	later := *a
	later.Now = func() time.Time { return tokenClock.Add(time.Second) }
	if tl, _ := later.Token(context.Background()); tl == tok {
		t.Error("a later clock signed the same token")
	}
}

func TestIAMTokenRefusesMissingInputs(t *testing.T) {
	failing := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no role")
	})
	for _, tc := range []struct {
		name string
		a    breaker.IAMAuth
		want string
	}{
		{"no user", breaker.IAMAuth{CacheName: "c", Region: "r", Credentials: tokenCreds}, "UserID"},
		{"no cache", breaker.IAMAuth{UserID: "u", Region: "r", Credentials: tokenCreds}, "CacheName"},
		{"no region", breaker.IAMAuth{UserID: "u", CacheName: "c", Credentials: tokenCreds}, "Region"},
		{"no credentials", breaker.IAMAuth{UserID: "u", CacheName: "c", Region: "r"}, "no credentials"},
		{"credentials fail", breaker.IAMAuth{UserID: "u", CacheName: "c", Region: "r", Credentials: failing}, "no role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.a.Token(context.Background())
			if !errors.Is(err, breaker.ErrIAMAuth) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrIAMAuth naming %s", err, tc.want)
			}
		})
	}
}

// TestIAMClientAuthenticatesEachConnectionWithItsToken: NewRedisClient
// sends the user id and a token signed for each new connection. The ACL
// user's password is the token the fixed clock and credentials sign, so
// only a client that sends exactly that authenticates, and two connections
// sign twice.
func TestIAMClientAuthenticatesEachConnectionWithItsToken(t *testing.T) {
	r := newACLRun(t)
	var signed atomic.Int64
	auth := &breaker.IAMAuth{UserID: "cobro-" + r.tag, CacheName: "mercadofresco-catalogo-dev", Region: "eu-west-1",
		Credentials: tokenCreds, Now: func() time.Time { signed.Add(1); return tokenClock }}
	token, err := auth.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	signed.Store(0)
	access, err := lambdaapi.BreakerAccessString(r.prefix, "pasarela")
	if err != nil {
		t.Fatal(err)
	}
	r.setUser(t, auth.UserID, token, access)
	t.Cleanup(func() { r.admin.Del(context.Background(), lambdaapi.BreakerKey(r.prefix, "pasarela")) })

	rdb := breaker.NewRedisClient(r.srv.Addr, false, auth)
	defer rdb.Close()
	ctx := ctxT(t)
	c1, c2 := rdb.Conn(), rdb.Conn()
	defer c1.Close()
	defer c2.Close()
	for _, c := range []*redis.Conn{c1, c2} {
		if err := c.Eval(ctx, "return redis.call('HGET', KEYS[1], 's')", []string{lambdaapi.BreakerKey(r.prefix, "pasarela")}).Err(); err != nil && err != redis.Nil {
			t.Fatalf("command as %s: %v", auth.UserID, err)
		}
	}
	if n := signed.Load(); n != 2 {
		t.Fatalf("%d tokens signed for 2 connections", n)
	}
	clk := retry.NewVirtualClock(t0)
	b, err := breaker.New(breaker.NewRedisStore(rdb), breaker.Config{Name: "pasarela", KeyPrefix: r.prefix,
		FailureThreshold: 3, Now: clk.Now, StoreTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	exercise(t, b, clk)

	// Signed at another time, the token is another password: refused.
	wrong := *auth
	wrong.Now = func() time.Time { return tokenClock.Add(time.Minute) }
	bad := breaker.NewRedisClient(r.srv.Addr, false, &wrong)
	defer bad.Close()
	if err := bad.Eval(ctx, "return 1", nil).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("a token signed a minute later: %v, want WRONGPASS", err)
	}
}

func TestLoadSettingsIAMUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		user string
		err  error
		msg  string
	}{
		{name: "no user: no AUTH", env: map[string]string{lambdaapi.EnvBreakerRedisAddr: "c:6379"}},
		{name: "user and cache", user: "mf-cobro-dev", env: map[string]string{lambdaapi.EnvBreakerRedisAddr: "c:6379",
			lambdaapi.EnvBreakerRedisUser: "mf-cobro-dev", lambdaapi.EnvBreakerCacheName: "mercadofresco-catalogo-dev"}},
		{name: "user without TLS", err: breaker.ErrIAMWithoutTLS, env: map[string]string{lambdaapi.EnvBreakerRedisAddr: "c:6379",
			lambdaapi.EnvBreakerRedisUser: "u", lambdaapi.EnvBreakerCacheName: "c", lambdaapi.EnvBreakerRedisTLS: "false"}},
		{name: "user without cache name", msg: lambdaapi.EnvBreakerCacheName, env: map[string]string{lambdaapi.EnvBreakerRedisAddr: "c:6379",
			lambdaapi.EnvBreakerRedisUser: "u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := lambdaenv.FromMap(tc.env)
			s, err := breaker.LoadSettings(env)
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if tc.msg != "" && (env.Err() == nil || !strings.Contains(env.Err().Error(), tc.msg)) {
				t.Fatalf("env problems %v, want %s", env.Err(), tc.msg)
			}
			if tc.err != nil || tc.msg != "" {
				return
			}
			if err != nil || env.Err() != nil {
				t.Fatal(err, env.Err())
			}
			auth := s.IAMAuth(aws.Config{Region: "eu-west-1", Credentials: tokenCreds})
			if (auth == nil) != (tc.user == "") || (auth != nil && (auth.UserID != tc.user || auth.CacheName != tc.env[lambdaapi.EnvBreakerCacheName] || auth.Region != "eu-west-1")) {
				t.Fatalf("IAMAuth %+v for user %q", auth, tc.user)
			}
		})
	}
}
