package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// TestMain lets the test binary act as mf-dlq in a child process
// (MF_DLQ_AS_MAIN=1), so the SIGKILL test needs no separate build.
func TestMain(m *testing.M) {
	if os.Getenv("MF_DLQ_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// offsetClock is the wall clock plus an offset: visibility timeouts pass
// without sleeping.
type offsetClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *offsetClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

type sqsEnv struct {
	fake     *localaws.SQS
	clock    *offsetClock
	src, dlq string
	srv      *httptest.Server
	mu       sync.Mutex
	calls    map[string]int         // operations served
	onCall   func(op string, n int) // after each served operation
	conns    map[net.Conn]bool      // connections the server has not closed
	changed  chan struct{}          // a connection opened or closed
}

// newSQS serves a fake with dev's Pedidos queue and DLQ over HTTP.
func newSQS(t *testing.T) *sqsEnv {
	t.Helper()
	e := &sqsEnv{clock: &offsetClock{}, calls: map[string]int{}, conns: map[net.Conn]bool{}, changed: make(chan struct{}, 1)}
	e.fake = localaws.NewSQS(localaws.SQSConfig{Now: e.clock.Now})
	var err error
	if e.dlq, err = e.fake.CreateQueue(catalog.PhysicalName(catalog.PedidosDLQName, "dev"), localaws.QueueConfig{RetentionPeriod: 14 * 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	if e.src, err = e.fake.CreateQueue(catalog.PhysicalName(catalog.PedidosQueueName, "dev"), localaws.QueueConfig{
		VisibilityTimeout: 400 * time.Second, Redrive: &localaws.RedrivePolicy{DeadLetterTargetARN: e.fake.ARN(e.dlq), MaxReceiveCount: 4}}); err != nil {
		t.Fatal(err)
	}
	h := e.fake.Handler()
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
		h.ServeHTTP(w, r)
		e.mu.Lock()
		e.calls[op]++
		n, f := e.calls[op], e.onCall
		e.mu.Unlock()
		if f != nil {
			f(op, n) // the response is written: the client may act on it now
		}
	}))
	e.srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		e.mu.Lock()
		if st == http.StateClosed || st == http.StateHijacked {
			delete(e.conns, c)
		} else {
			e.conns[c] = true
		}
		e.mu.Unlock()
		select {
		case e.changed <- struct{}{}:
		default:
		}
	}
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	return e
}

// waitIdle returns once the server has closed every connection: after a
// client is killed, a request it sent may still be in a handler, and a
// receive served then would hold messages past the clock's next advance.
func (e *sqsEnv) waitIdle(ctx context.Context, t *testing.T) {
	t.Helper()
	for {
		e.mu.Lock()
		open := len(e.conns)
		e.mu.Unlock()
		if open == 0 {
			return
		}
		select {
		case <-e.changed:
		case <-ctx.Done():
			t.Fatalf("the server still has %d connections of the killed child open", open)
		}
	}
}

// deadLetter sends n consumer-dead-lettered orders (distinct bodies) to the DLQ.
func (e *sqsEnv) deadLetter(t *testing.T, n int) map[string]bool {
	t.Helper()
	bodies := map[string]bool{}
	for i := range n {
		body := fmt.Sprintf(`{"version":1,"pedido_id":"PED-2026-%06d","lineas":[{"sku":"7501031311309","cantidad":1}],"confirmado_en":%q}`, i, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		bodies[body] = true
		_, err := e.fake.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &e.dlq, MessageBody: &body, MessageAttributes: map[string]types.MessageAttributeValue{
			sqsbatch.AttrFailureClass: sqsbatch.StringAttribute("permanent"), sqsbatch.AttrFailureReason: sqsbatch.StringAttribute("warehouse: sku 7501031311309 has no location"),
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return bodies
}

func (e *sqsEnv) bodies(t *testing.T, url string) []string {
	t.Helper()
	st, err := e.fake.Inspect(url)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range st {
		out = append(out, s.Body)
	}
	return out
}

// checkNothingLost: every original body is in the source or the DLQ; any
// extra copy is a duplicate of an original.
func (e *sqsEnv) checkNothingLost(t *testing.T, want map[string]bool) (dups int) {
	t.Helper()
	seen := map[string]int{}
	for _, b := range append(e.bodies(t, e.src), e.bodies(t, e.dlq)...) {
		if !want[b] {
			t.Fatalf("unexpected message %q", b)
		}
		seen[b]++
	}
	for b := range want {
		if seen[b] == 0 {
			t.Fatalf("message lost: %s", b)
		}
		dups += seen[b] - 1
	}
	return dups
}

// TestRedriveKilledLosesNothing runs mf-dlq redrive as a child process
// against the served fake and SIGKILLs it midway, at the two moments that
// matter: right after a send was answered (before its delete) and right
// after a delete was answered (before the next send). Source + DLQ must
// still hold every message (duplicates only); a second run then finishes.
func TestRedriveKilledLosesNothing(t *testing.T) {
	for _, kill := range []struct {
		op string
		n  int
	}{{"SendMessage", 60}, {"DeleteMessage", 40}} {
		t.Run(kill.op, func(t *testing.T) { killedRedrive(t, kill.op, kill.n) })
	}
}

func killedRedrive(t *testing.T, killOp string, killN int) {
	e := newSQS(t)
	want := e.deadLetter(t, 300)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	killAt := make(chan struct{})
	var once sync.Once
	e.mu.Lock()
	e.onCall = func(op string, n int) {
		if op == killOp && n == killN {
			once.Do(func() { close(killAt) })
		}
	}
	e.mu.Unlock()
	cmd := exec.CommandContext(ctx, os.Args[0], "redrive", "Pedidos", "-e", "dev", "--confirm-fixed", "--only", "data", "--rate", "500", "--endpoint-url", e.srv.URL)
	cmd.Env = append(os.Environ(), "MF_DLQ_AS_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-killAt:
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	case err := <-exited:
		t.Fatalf("mf-dlq finished before the kill: %v\n%s", err, stderr.String())
	case <-ctx.Done():
		t.Fatalf("no %s #%d within the deadline\n%s", killOp, killN, stderr.String())
	}
	select {
	case err := <-exited:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("child was not killed: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("killed child did not exit")
	}
	e.waitIdle(ctx, t)
	e.mu.Lock()
	e.onCall = nil
	e.mu.Unlock()
	moved := len(e.bodies(t, e.src))
	dups := e.checkNothingLost(t, want)
	t.Logf("after SIGKILL: %d in the source, %d in the DLQ, %d duplicates", moved, len(e.bodies(t, e.dlq)), dups)
	if moved < killN || moved == 300 {
		t.Fatalf("the kill did not land midway: %d moved", moved)
	}

	// The dead run's held messages come back after their visibility timeout;
	// a second run moves the rest.
	e.clock.Advance(10 * time.Minute)
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"redrive", "Pedidos", "-e", "dev", "--confirm-fixed", "--only", "data", "--rate", "500", "--endpoint-url", e.srv.URL}, &out, &errb); code != exitOK {
		t.Fatalf("second run: exit %d\n%s%s", code, out.String(), errb.String())
	}
	t.Logf("second run:\n%s", errb.String())
	if n := len(e.bodies(t, e.dlq)); n != 0 {
		t.Fatalf("DLQ still holds %d", n)
	}
	if dups := e.checkNothingLost(t, want); dups > 1 {
		t.Errorf("%d duplicates; one kill can make at most one", dups)
	}
}

// shell returns a function that runs one mf-dlq command in-process against
// the served fake, within a minute, and returns its exit code and output.
func (e *sqsEnv) shell(t *testing.T) func(args ...string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(ctx, append(args, "--endpoint-url", e.srv.URL), &out, &out)
		return code, out.String()
	}
}

// TestCommands runs the commands in-process against the served fake and
// checks outputs and exit codes.
func TestCommands(t *testing.T) {
	e := newSQS(t)
	sh := e.shell(t)
	code, out := sh("inspect", "Pedidos", "-e", "dev")
	if code != exitEmpty || !strings.Contains(out, "returned no message") {
		t.Errorf("inspect empty: %d %s", code, out)
	}
	e.deadLetter(t, 12)
	saved := filepath.Join(t.TempDir(), "dlq.jsonl")
	code, out = sh("inspect", "mercadofresco-pedidos-fallidos-dev", "-n", "5", "--save", saved)
	if code != exitOK || !strings.Contains(out, "5 messages of mercadofresco-pedidos-fallidos-dev") || !strings.Contains(out, "saved 5 messages") {
		t.Errorf("inspect: %d %s", code, out)
	}
	if fi, err := os.Stat(saved); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("saved file: %v %v", fi, err)
	}
	if code, out = sh("classify", "--from-file", saved); code != exitOK || !strings.Contains(out, "verdict: DATA") {
		t.Errorf("classify --from-file: %d %s", code, out)
	}
	if code, out = sh("classify", "Pedidos", "-e", "dev", "--json"); code != exitOK || !strings.Contains(out, `"verdict": "data"`) {
		t.Errorf("classify --json: %d %s", code, out)
	}
	if code, out = sh("redrive", "Pedidos", "-e", "dev"); code != exitRefused || !strings.Contains(out, "--confirm-fixed") {
		t.Errorf("redrive unconfirmed: %d %s", code, out)
	}
	if code, out = sh("contain", "Pedidos", "-e", "nope"); code != exitUsage {
		t.Errorf("bad env: %d %s", code, out)
	}
	if code, out = sh("verify", "Pedidos", "-e", "dev"); code != exitNotVerified || !strings.Contains(out, "holds 12 messages") {
		t.Errorf("verify with messages: %d %s", code, out)
	}
	e.fake.SetFault(func(op, _ string) error {
		if op == "ReceiveMessage" {
			return &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized"}
		}
		return nil
	})
	if code, out = sh("inspect", "Pedidos", "-e", "dev"); code != exitError || !strings.Contains(out, "missing permission: the caller lacks sqs:ReceiveMessage") {
		t.Errorf("denied: %d %s", code, out)
	}
	e.fake.SetFault(nil)
	if code, out = sh("frobnicate"); code != exitUsage {
		t.Errorf("unknown command: %d %s", code, out)
	}
}

// TestClassifyVerdictsInJSON: each of the sandbox's data sets, saved, gets
// its verdict in classify --json, which exits 0.
func TestClassifyVerdictsInJSON(t *testing.T) {
	dir := t.TempDir()
	for scenario, want := range map[string]dlq.Verdict{"transient-burst": dlq.Transient, "data-drip": dlq.Data, "deploy-v2": dlq.Poison, "malformed": dlq.Poison, "mixture": dlq.Mixed, "expired": dlq.Expired} {
		msgs, err := loadScenario(scenario, "arn:aws:sqs:eu-west-1:1:cola-mercadofresco-pedidos")
		var file bytes.Buffer
		if err != nil || dlq.WriteMessages(&file, msgs) != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, scenario+".jsonl")
		if err := os.WriteFile(path, file.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		var rep dlq.Report
		if code := run(context.Background(), []string{"classify", "--from-file", path, "--json"}, &out, &errb); code != exitOK || json.Unmarshal(out.Bytes(), &rep) != nil || rep.Verdict != want {
			t.Errorf("%s: exit %d, verdict %s, want %s\n%s%s", scenario, code, rep.Verdict, want, out.String(), errb.String())
		}
	}
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"classify", "--from-file", filepath.Join(dir, "none")}, &errb, &errb); code != exitError {
		t.Errorf("missing file: %d", code)
	}
}

// TestExpiredMessages: messages a consumer refused as older than its replay
// window are classified expired; redrive leaves them and exits 4
// (refused) until --readmit-expired sends them back marked re-admitted.
func TestExpiredMessages(t *testing.T) {
	e := newSQS(t)
	sh := e.shell(t)
	ctx := t.Context()
	for i := range 3 {
		_, err := e.fake.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &e.dlq, MessageBody: aws.String(fmt.Sprintf(`{"version":1,"pedido_id":"PED-2026-%06d","lineas":[{"sku":"7501031311309","cantidad":1}],"confirmado_en":"2026-10-01T07:00:00Z"}`, i)), MessageAttributes: map[string]types.MessageAttributeValue{
			sqsbatch.AttrFailureClass:  sqsbatch.StringAttribute("permanent"),
			sqsbatch.AttrFailureReason: sqsbatch.StringAttribute("permanent: expired-idempotency-window: preparacion:PED: confirmado_en 2026-10-01T07:00:00Z is 60 days old"),
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if code, out := sh("classify", "Pedidos", "-e", "dev"); code != exitOK || !strings.Contains(out, "verdict: EXPIRED") {
		t.Errorf("classify: %d %s", code, out)
	}
	if code, out := sh("redrive", "Pedidos", "-e", "dev", "--confirm-fixed"); code != exitRefused || !strings.Contains(out, "older than the replay window of mf-preparar-pedido") || len(e.bodies(t, e.src)) != 0 {
		t.Errorf("redrive: %d %s", code, out)
	}
	if code, out := sh("redrive", "Pedidos", "-e", "dev", "--confirm-fixed", "--readmit-expired"); code != exitOK || !strings.Contains(out, "re-admitting 3 of 3") {
		t.Errorf("redrive --readmit-expired: %d %s", code, out)
	}
	st, _ := e.fake.Inspect(e.src)
	for _, m := range st {
		if _, ok := m.MessageAttributes[lambdaapi.AttrReadmision]; !ok {
			t.Errorf("redriven without the re-admission mark: %v", m.MessageAttributes)
		}
	}
	if len(st) != 3 {
		t.Errorf("%d messages back in the source, want 3", len(st))
	}
}
