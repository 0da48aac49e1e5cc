package localaws

// Dynalite: a local dynalite (a DynamoDB-compatible HTTP
// server in Node.js) for tests and hands back an aws-sdk-go-v2 DynamoDB
// client pointed at it, so tests run the real SDK client over real HTTP (no
// request leaves 127.0.0.1: static fake credentials, a local endpoint):
//
//	srv := StartDynalite(t)
//	srv.CreateTable(t, "mercadofresco-idempotencia", "clave", "")
//	client := srv.Client
//
// The binary comes from $DYNALITE, $PATH or a node_modules/.bin above the
// working directory. A request its client abandons half-sent is dropped
// (abortedrequests.cjs) instead of ending the process. dynalite ignores
// ReturnValuesOnConditionCheckFailure and runs no TTL deletions.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
)

// dynaliteReady bounds the wait for dynalite to answer; node starts in well
// under a second, but CI machines with 2 cores can be slow under load.
const dynaliteReady = 30 * time.Second

// Dynalite is a running dynalite process.
type Dynalite struct {
	// Endpoint is the base URL, e.g. http://127.0.0.1:41234.
	Endpoint string
	// Client is a DynamoDB client for Endpoint with static fake credentials.
	Client *dynamodb.Client
	*process
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
	root, err := gobuild.FindUp(guardFile)
	if err != nil {
		return nil, err
	}
	guard := filepath.Join(root, guardFile)
	var srv *Dynalite
	err = onFreePort(ctx, func(port int) error {
		// createTableMs etc. default to 500 ms of CREATING state; tests
		// want the table at once.
		cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
			"NODE_OPTIONS="+strings.TrimSpace(os.Getenv("NODE_OPTIONS")+" --require "+guard))
		p, err := startProcess(cmd)
		if err != nil {
			return err
		}
		endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
		srv = &Dynalite{Endpoint: endpoint, Client: DynamoDBClient(endpoint), process: p}
		// ListTables proves the socket is bound and the request path
		// (signing, JSON protocol) works.
		return p.waitReady(ctx, dynaliteReady, func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := srv.Client.ListTables(ctx, &dynamodb.ListTablesInput{})
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return srv, nil
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

// CreateTable creates a table with a string partition key, a string sort
// key (none when sortKey is empty) and on-demand billing, and waits until it
// is ACTIVE.
func (s *Dynalite) CreateTable(tb testing.TB, table, partitionKey, sortKey string) {
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
	s.stop(2 * time.Second)
	return nil
}

func findDynalite() (string, error) {
	if p := os.Getenv("DYNALITE"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("dynalite"); err == nil {
		return p, nil
	}
	const rel = "node_modules/.bin/dynalite"
	if dir, err := gobuild.FindUp(rel); err == nil {
		return filepath.Join(dir, rel), nil
	}
	return "", errors.New("dynalite not found: set $DYNALITE, put it on $PATH or run `npm ci` in the repository root")
}

// guardFile is abortedrequests.cjs, for node's --require.
const guardFile = "internal/localaws/abortedrequests.cjs"

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
	s.CreateTable(tb, name, partitionKey, sortKey)
	return name
}
