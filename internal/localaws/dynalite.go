package localaws

// Dynalite: a local dynalite (a DynamoDB-compatible HTTP
// server in Node.js) for tests and hands back an aws-sdk-go-v2 DynamoDB
// client pointed at it, so tests run the real SDK client over real HTTP (no
// request leaves 127.0.0.1: static fake credentials, a local endpoint):
//
//	srv := StartDynalite(t)
//	srv.CreateTable(t, "mercadofresco-idempotencia", "clave")
//	client := srv.Client
//
// The binary comes from $DYNALITE, $PATH or a node_modules/.bin above the
// working directory. A request its client abandons half-sent is dropped
// (abortedrequests.cjs) instead of ending the process. dynalite ignores
// ReturnValuesOnConditionCheckFailure and runs no TTL deletions.

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// dynaliteAttempts bounds the retries when another process grabs the free port
// between our probe and dynalite's bind.
const dynaliteAttempts = 5

// dynaliteReady bounds the wait for dynalite to answer; node starts in well
// under a second, but CI machines with 2 cores can be slow under load.
const dynaliteReady = 30 * time.Second

// Dynalite is a running dynalite process.
type Dynalite struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:41234.
	Endpoint string
	// Client is a DynamoDB client for Endpoint with static fake credentials.
	Client *dynamodb.Client

	cmd     *exec.Cmd
	stderr  *Buffer
	done    chan struct{}
	waitErr error
	once    sync.Once
}

// StartDynalite launches dynalite on a free 127.0.0.1 port, waits until it answers
// ListTables and registers its shutdown with tb.Cleanup. It fails the test
// (it never skips) when dynalite cannot be started: CI has it installed.
func StartDynalite(tb testing.TB) *Dynalite {
	tb.Helper()
	srv, err := LaunchDynalite(context.Background())
	if err != nil {
		tb.Fatalf("dynalite: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}

// LaunchDynalite is StartDynalite for callers without a testing.TB (for example TestMain,
// to share one server between the tests of a package). The caller must call
// Close.
func LaunchDynalite(ctx context.Context) (*Dynalite, error) {
	bin, err := findDynalite()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range dynaliteAttempts {
		srv, err := launchDynalite(ctx, bin)
		if err == nil {
			return srv, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("start %s: %w", bin, lastErr)
}

// DynamoDBClient returns a DynamoDB client for endpoint with static fake
// credentials, so that no shared config or real account is ever consulted.
func DynamoDBClient(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDFAKEFORTESTS", "fake-secret", ""),
	})
}

// CreateTable creates a table with a single string partition key and
// on-demand billing, and waits until it is ACTIVE.
func (s *Dynalite) CreateTable(tb testing.TB, table, partitionKey string) {
	tb.Helper()
	s.CreateTableWithSortKey(tb, table, partitionKey, "")
}

// CreateTableWithSortKey is CreateTable with a string sort key as well
// (none when sortKey is empty).
func (s *Dynalite) CreateTableWithSortKey(tb testing.TB, table, partitionKey, sortKey string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dynaliteReady)
	defer cancel()
	defs := []types.AttributeDefinition{{AttributeName: aws.String(partitionKey), AttributeType: types.ScalarAttributeTypeS}}
	keys := []types.KeySchemaElement{{AttributeName: aws.String(partitionKey), KeyType: types.KeyTypeHash}}
	if sortKey != "" {
		defs = append(defs, types.AttributeDefinition{AttributeName: aws.String(sortKey), AttributeType: types.ScalarAttributeTypeS})
		keys = append(keys, types.KeySchemaElement{AttributeName: aws.String(sortKey), KeyType: types.KeyTypeRange})
	}
	err := s.Create(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: defs,
		KeySchema:            keys,
	})
	if err != nil {
		tb.Fatalf("dynalite: create table %s: %v", table, err)
	}
}

// Create creates the table that in describes and waits until it is ACTIVE.
func (s *Dynalite) Create(ctx context.Context, in *dynamodb.CreateTableInput) error {
	if _, err := s.Client.CreateTable(ctx, in); err != nil {
		return err
	}
	waiter := dynamodb.NewTableExistsWaiter(s.Client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = 200 * time.Millisecond
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, dynaliteReady); err != nil {
		return fmt.Errorf("not ACTIVE: %w", err)
	}
	return nil
}

// Close stops dynalite (SIGTERM, then SIGKILL after two seconds) and waits
// for it to exit. It is safe to call more than once.
func (s *Dynalite) Close() error {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(2 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return nil
}

func launchDynalite(ctx context.Context, bin string) (*Dynalite, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	// createTableMs etc. default to 500 ms of CREATING state; tests want the
	// table at once.
	cmd := exec.Command(bin,
		"--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	guard, err := dynaliteGuard()
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NODE_OPTIONS="+strings.TrimSpace(os.Getenv("NODE_OPTIONS")+" --require "+guard))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := &Buffer{Limit: StderrLimit}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	srv := &Dynalite{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		cmd:      cmd,
		stderr:   stderr,
		done:     make(chan struct{}),
	}
	listening := make(chan struct{})
	go func() {
		// Drain stdout for the life of the process so that dynalite never
		// blocks on a full pipe.
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "listening") {
				close(listening)
				signalled = true
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		srv.waitErr = cmd.Wait()
		close(srv.done)
	}()

	timer := time.NewTimer(dynaliteReady)
	defer timer.Stop()
	select {
	case <-listening:
	case <-srv.done:
		return nil, fmt.Errorf("dynalite exited before listening on port %d: %v: %s", port, srv.waitErr, stderr.String())
	case <-timer.C:
		_ = srv.Close()
		return nil, fmt.Errorf("dynalite did not start listening on port %d within %s: %s", port, dynaliteReady, stderr.String())
	case <-ctx.Done():
		_ = srv.Close()
		return nil, ctx.Err()
	}

	srv.Client = DynamoDBClient(srv.Endpoint)
	if err := srv.waitReady(ctx, timer.C); err != nil {
		_ = srv.Close()
		return nil, err
	}
	return srv, nil
}

// waitReady polls ListTables: the "listening" line proves the socket is
// bound, this proves the request path (signing, JSON protocol) works.
func (s *Dynalite) waitReady(ctx context.Context, deadline <-chan time.Time) error {
	for {
		reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := s.Client.ListTables(reqCtx, &dynamodb.ListTablesInput{})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("dynalite exited: %v", s.waitErr)
		case <-deadline:
			return fmt.Errorf("dynalite at %s not answering: %w", s.Endpoint, err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func findDynalite() (string, error) {
	if p := os.Getenv("DYNALITE"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("dynalite"); err == nil {
		return p, nil
	}
	const rel = "node_modules/.bin/dynalite"
	if dir, err := FindUp(rel); err == nil {
		return filepath.Join(dir, rel), nil
	}
	return "", errors.New("dynalite not found: set $DYNALITE, put it on $PATH or run `npm ci` in the repository root")
}

//go:embed abortedrequests.cjs
var abortedRequests []byte

// dynaliteGuard writes abortedrequests.cjs to disk once, for node's --require.
var dynaliteGuard = sync.OnceValues(func() (string, error) {
	// Named by its content, so processes sharing the temporary directory
	// write the same file; written under a temporary name and renamed, so
	// no node ever reads half of it.
	path := filepath.Join(os.TempDir(), fmt.Sprintf("localaws-abortedrequests-%x.cjs", sha256.Sum256(abortedRequests)))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "localaws-*.cjs")
	if err != nil {
		return "", err
	}
	_, werr := f.Write(abortedRequests)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return path, os.Rename(f.Name(), path)
})

// RunWithDynalite is a test package's TestMain with one dynalite for all its
// tests: it launches the server (into *srv), runs the tests, stops it and
// exits with the tests' code.
//
//	var ddb *Dynalite
//	func TestMain(m *testing.M) { RunWithDynalite(m, &ddb) }
func RunWithDynalite(m *testing.M, srv **Dynalite) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	s, err := LaunchDynalite(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dynalite: %v\n", err)
		os.Exit(1)
	}
	*srv = s
	code := m.Run()
	_ = s.Close()
	os.Exit(code)
}

var tableSeq atomic.Int64

// NewTable creates a table whose name (returned) is unique to this process
// and test run, with the given keys (sortKey may be empty).
func (s *Dynalite) NewTable(tb testing.TB, prefix, partitionKey, sortKey string) string {
	tb.Helper()
	name := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), tableSeq.Add(1))
	s.CreateTableWithSortKey(tb, name, partitionKey, sortKey)
	return name
}
