package localaws

// Redis: a private redis-server for one test: on a free
// port, in the test's temporary directory, without persistence, stopped and
// removed when the test ends. Tests that stop, restart or flush Redis must
// use it, never the machine's shared 127.0.0.1:6379.
//
//	srv := StartRedis(t)
//	rdb := srv.Client(t)
//	srv.Stop()  // Redis unreachable (fail-open tests)
//	srv.Start() // back on the same port, empty
//
// StartRedisTLS serves TLS only, with ServerCert (as ElastiCache Serverless
// is reached).

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"github.com/redis/go-redis/v9"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The certificate the local TLS servers present (the machine's PostgreSQL,
// a TLS-only Redis): Debian's snakeoil certificate, for localhost, and its
// key.
const (
	ServerCert = "/etc/ssl/certs/ssl-cert-snakeoil.pem"
	serverKey  = "/etc/ssl/private/ssl-cert-snakeoil.key"
)

// redisReady bounds the wait for a started server to answer PING.
const redisReady = 10 * time.Second

// Redis is one private redis-server process.
type Redis struct {
	// Addr is host:port, the same across Stop and Start.
	Addr string

	t   testing.TB
	dir string
	tls *tls.Config // the clients' configuration; nil without TLS

	mu   sync.Mutex
	proc *process // nil while stopped
}

// StartRedis launches a server and registers its shutdown with t.Cleanup. It
// fails the test (t.Fatal) when redis-server is missing or does not become
// ready in 10 seconds.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	return startRedis(t, false)
}

// StartRedisTLS is StartRedis for a server that accepts only TLS connections
// (clients are not asked for a certificate).
func StartRedisTLS(t testing.TB) *Redis {
	t.Helper()
	return startRedis(t, true)
}

func startRedis(t testing.TB, useTLS bool) *Redis {
	t.Helper()
	bin := redisBinary()
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("redis: %s not found on PATH (apt-get install redis-server): %v", bin, err)
	}
	s := &Redis{t: t, dir: t.TempDir()}
	if useTLS {
		pool := x509.NewCertPool()
		if pem, err := os.ReadFile(ServerCert); err != nil || !pool.AppendCertsFromPEM(pem) {
			t.Fatalf("redis: certificate %s: %v", ServerCert, err)
		}
		s.tls = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: "localhost"}
	}
	t.Cleanup(s.Stop)
	err := onFreePort(context.Background(), func(port int) error {
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		return s.start(bin)
	})
	if err != nil {
		t.Fatalf("redis: cannot start %s: %v", bin, err)
	}
	return s
}

// Start starts the server again on the same address after Stop (with an
// empty data set). It fails the test if it cannot.
func (s *Redis) Start() {
	s.t.Helper()
	if err := s.start(redisBinary()); err != nil {
		s.t.Fatalf("redis: restart on %s: %v", s.Addr, err)
	}
}

// redisBinary is the server started: redis-server, unless REDIS_SERVER
// names another.
func redisBinary() string { return cmp.Or(os.Getenv("REDIS_SERVER"), "redis-server") }

func (s *Redis) start(bin string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return fmt.Errorf("already running")
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	listen := []string{"--port", port}
	if s.tls != nil {
		listen = []string{"--port", "0", "--tls-port", port, "--tls-cert-file", ServerCert,
			"--tls-key-file", serverKey, "--tls-auth-clients", "no"}
	}
	p, err := startProcess(exec.Command(bin, append(listen, "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no")...))
	if err != nil {
		return err
	}
	probe := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond, TLSConfig: s.tls})
	defer probe.Close()
	if err := p.waitReady(context.Background(), redisReady, func(ctx context.Context) error { return probe.Ping(ctx).Err() }); err != nil {
		return err
	}
	s.proc = p
	return nil
}

// Stop kills the server (SIGKILL: like a crashed or unreachable node) and
// waits for it to exit. Clients get connection errors until Start. Stopping
// a stopped server does nothing.
func (s *Redis) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.stop(0)
		s.proc = nil
	}
}

// Client returns a go-redis client for the server with short timeouts and
// no command retries (so a test sees an outage at once), closed when the
// test ends.
func (s *Redis) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:         s.Addr,
		DialTimeout:  200 * time.Millisecond,
		ReadTimeout:  time.Second,
		WriteTimeout: time.Second,
		MaxRetries:   -1,
		TLSConfig:    s.tls,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// RedisKeyPrefix returns a key prefix unique to this test and process, for tests
// that share a server.
func RedisKeyPrefix(t testing.TB) string {
	return fmt.Sprintf("test:%d:%s:%d:", os.Getpid(), t.Name(), time.Now().UnixNano())
}
