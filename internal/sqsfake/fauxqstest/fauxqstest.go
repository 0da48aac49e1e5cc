// Package fauxqstest runs fauxqs, an independent SNS/SQS emulator (npm, run
// by the Node pinned in package.json), for tests that check sqsfake against
// it or need SNS. The server listens on 127.0.0.1 on a port the OS picks,
// and its clock is virtual: fauxqs reads every deadline (visibility, delay,
// deduplication window) from Date.now, which stands still until Advance, so
// a test of a 400 s visibility timeout takes no wall time. Launch once per
// test package (TestMain) and Close at the end; the process also exits when
// the test binary dies (its stdin closes). Node and fauxqs are looked up in
// node_modules above the working directory; when they are missing Launch
// fails with a message naming `make install` (tests never skip).
package fauxqstest

import (
	"bufio"
	"context"
	_ "embed"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mercadofresco/integration/internal/testproc"
)

//go:embed launcher.mjs
var launcher string

// Region is the region of every queue URL and ARN the server hands out
// (clients must sign for it: fauxqs reads the region from the signature).
const Region = "eu-west-1"

// readyTimeout bounds the start (Node loads fauxqs in about half a second;
// a loaded 2-core machine is slower) and each clock command.
const readyTimeout = 30 * time.Second

// Server is a running fauxqs process with a virtual clock.
type Server struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:41234.
	Endpoint string

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string
	done    chan struct{}
	stderr  *testproc.Buffer
	mu      sync.Mutex // one clock command at a time
	now     time.Time
	closing sync.Once
}

// Launch starts fauxqs with its clock at start and returns once it answers
// GET /health. The caller must Close it.
func Launch(ctx context.Context, start time.Time) (*Server, error) {
	node, app, err := find()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, "--input-type=module", "-e", launcher, app, strconv.FormatInt(start.UnixMilli(), 10))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &Server{cmd: cmd, stdin: stdin, lines: make(chan string, 16), done: make(chan struct{}), stderr: &testproc.Buffer{Limit: testproc.StderrLimit}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("fauxqstest: start %s: %w", node, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	line, err := s.next(ctx)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("fauxqstest: fauxqs did not start: %w", err)
	}
	var port, ms int64
	if _, err := fmt.Sscanf(line, "ready %d %d", &port, &ms); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("fauxqstest: unexpected first line %q: %w", line, err)
	}
	s.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	s.now = time.UnixMilli(ms).UTC()
	if err := s.waitHealthy(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// find returns the pinned node binary and fauxqs's entry point from the
// first node_modules above the working directory that has both.
func find() (node, app string, err error) {
	const nodeRel, appRel = "node_modules/.bin/node", "node_modules/fauxqs/dist/app.js"
	dir, err := testproc.FindUp(nodeRel, appRel)
	if err != nil {
		return "", "", fmt.Errorf("fauxqstest: %w: run `make install` (package.json pins both)", err)
	}
	return filepath.Join(dir, nodeRel), filepath.Join(dir, appRel), nil
}

// next returns the launcher's next stdout line.
func (s *Server) next(ctx context.Context) (string, error) {
	select {
	case line, ok := <-s.lines:
		if !ok {
			<-s.done
			return "", fmt.Errorf("the process exited: %s", strings.TrimSpace(s.stderr.String()))
		}
		return line, nil
	case <-ctx.Done():
		return "", fmt.Errorf("%w (stderr: %s)", ctx.Err(), strings.TrimSpace(s.stderr.String()))
	}
}

var healthClient = &http.Client{Timeout: 2 * time.Second}

// waitHealthy polls GET /health until it answers 200 or ctx ends.
func (s *Server) waitHealthy(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Endpoint+"/health", nil)
		if err != nil {
			return err
		}
		resp, err := healthClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /health: %s", resp.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fauxqstest: fauxqs at %s not healthy: %w (last: %v)", s.Endpoint, ctx.Err(), err)
		case <-s.done:
			return fmt.Errorf("fauxqstest: fauxqs exited: %s", strings.TrimSpace(s.stderr.String()))
		case <-tick.C:
		}
	}
}

// Now returns the server's virtual time.
func (s *Server) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the server's clock forward by d (whole milliseconds) and
// returns the new time. Every queue on the server sees the same clock.
func (s *Server) Advance(d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, fmt.Errorf("fauxqstest: cannot move the clock back (%s)", d)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.stdin, "advance %d\n", d.Milliseconds()); err != nil {
		return time.Time{}, fmt.Errorf("fauxqstest: advance: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	line, err := s.next(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("fauxqstest: advance: %w", err)
	}
	ms, err := strconv.ParseInt(strings.TrimPrefix(line, "now "), 10, 64)
	if err != nil || !strings.HasPrefix(line, "now ") {
		return time.Time{}, fmt.Errorf("fauxqstest: advance: unexpected answer %q", line)
	}
	s.now = time.UnixMilli(ms).UTC()
	return s.now, nil
}

// Client returns an SQS client for the server: static fake credentials (the
// signature carries the region), no retries, so a test sees every answer.
func (s *Server) Client() *sqs.Client { return NewClient(s.Endpoint) }

// NewClient returns an SQS client for endpoint with static fake credentials,
// Region, no retries, and a 30 s bound on each call (a hung server fails
// the test instead of stalling it).
func NewClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:           Region,
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFAKEFORTESTS", "fake-secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       &http.Client{Timeout: readyTimeout},
	})
}

// Close stops fauxqs (stdin closed, then SIGKILL after two seconds) and
// waits for it to exit. It is safe to call more than once.
func (s *Server) Close() error {
	s.closing.Do(func() {
		_ = s.stdin.Close()
		select {
		case <-s.done:
		case <-time.After(2 * time.Second):
			_ = s.cmd.Process.Signal(syscall.SIGKILL)
			<-s.done
		}
	})
	return nil
}
