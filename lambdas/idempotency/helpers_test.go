package idempotency

import (
	"context"
	"errors"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// One dynalite for the whole package: starting node costs ~0.5 s, and every
// test gets its own table, so tests cannot see each other's items.
var dynalite *localaws.Dynalite

func TestMain(m *testing.M) {
	srv, err := localaws.LaunchDynalite(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "idempotency tests need dynalite:", err)
		os.Exit(1)
	}
	dynalite = srv
	code := m.Run()
	_ = srv.Close()
	os.Exit(code)
}

var tableSeq atomic.Int64

var unsafeTableChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// newTable creates a fresh table and returns its name.
func newTable(t testing.TB) string {
	t.Helper()
	name := unsafeTableChars.ReplaceAllString(t.Name(), "-")
	if len(name) > 200 {
		name = name[:200]
	}
	name = fmt.Sprintf("%s-%d", name, tableSeq.Add(1))
	dynalite.CreateTable(t, name, lambdaapi.IdempotencyKeyAttribute, "")
	return name
}

// fakeClock is the real clock shifted by an offset, so tests can jump past
// a lock or an expiry without sleeping.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// countingDB counts the calls the store makes.
type countingDB struct {
	inner                    DynamoDBAPI
	get, put, update, delete atomic.Int64
	// putsAnswered counts PutItem calls that have returned (the store has
	// its answer), as opposed to put, counted when the call starts.
	putsAnswered atomic.Int64
}

func (c *countingDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.get.Add(1)
	return c.inner.GetItem(ctx, in, o...)
}

func (c *countingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.put.Add(1)
	defer c.putsAnswered.Add(1)
	return c.inner.PutItem(ctx, in, o...)
}

// waitPutsAnswered waits until n PutItem calls have returned, failing the
// test after 20 s.
func (c *countingDB) waitPutsAnswered(t testing.TB, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for c.putsAnswered.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d PutItem calls answered after 20 s", c.putsAnswered.Load(), n)
		}
		time.Sleep(time.Millisecond) // polls a counter, bounded above
	}
}

func (c *countingDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.update.Add(1)
	return c.inner.UpdateItem(ctx, in, o...)
}

func (c *countingDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.delete.Add(1)
	return c.inner.DeleteItem(ctx, in, o...)
}

type callCounts struct{ Get, Put, Update, Delete int64 }

func (c callCounts) Total() int64 { return c.Get + c.Put + c.Update + c.Delete }

func (c callCounts) String() string {
	var parts []string
	for _, p := range []struct {
		n string
		v int64
	}{{"PutItem", c.Put}, {"GetItem", c.Get}, {"UpdateItem", c.Update}, {"DeleteItem", c.Delete}} {
		if p.v > 0 {
			parts = append(parts, fmt.Sprintf("%s×%d", p.n, p.v))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " + ")
}

func (c *countingDB) snapshot() callCounts {
	return callCounts{Get: c.get.Load(), Put: c.put.Load(), Update: c.update.Load(), Delete: c.delete.Load()}
}

// since returns the calls made after an earlier snapshot.
func (c *countingDB) since(before callCounts) callCounts {
	now := c.snapshot()
	return callCounts{Get: now.Get - before.Get, Put: now.Put - before.Put, Update: now.Update - before.Update, Delete: now.Delete - before.Delete}
}

// allOldDB gives dynalite DynamoDB's documented behaviour for
// ReturnValuesOnConditionCheckFailure=ALL_OLD, which dynalite ignores: on a
// failed condition it fills ConditionalCheckFailedException.Item by reading
// the item through a side channel the store cannot see (so the store's call
// count is what it would be against DynamoDB). The read happens after the
// failed write rather than atomically with it, which the store tolerates by
// design (it re-claims when the item changed in between).
type allOldDB struct{ inner *dynamodb.Client }

func (a allOldDB) fill(ctx context.Context, err error, table *string, key map[string]types.AttributeValue, rv types.ReturnValuesOnConditionCheckFailure) error {
	var ccf *types.ConditionalCheckFailedException
	if rv != types.ReturnValuesOnConditionCheckFailureAllOld || !errors.As(err, &ccf) || len(ccf.Item) > 0 {
		return err
	}
	out, gerr := a.inner.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	if gerr == nil {
		ccf.Item = out.Item
	}
	return err
}

func (a allOldDB) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return a.inner.GetItem(ctx, in, o...)
}

func (a allOldDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := a.inner.PutItem(ctx, in, o...)
	if err != nil {
		key := map[string]types.AttributeValue{lambdaapi.IdempotencyKeyAttribute: in.Item[lambdaapi.IdempotencyKeyAttribute]}
		err = a.fill(ctx, err, in.TableName, key, in.ReturnValuesOnConditionCheckFailure)
	}
	return out, err
}

func (a allOldDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.inner.UpdateItem(ctx, in, o...)
	if err != nil {
		err = a.fill(ctx, err, in.TableName, in.Key, in.ReturnValuesOnConditionCheckFailure)
	}
	return out, err
}

func (a allOldDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := a.inner.DeleteItem(ctx, in, o...)
	if err != nil {
		err = a.fill(ctx, err, in.TableName, in.Key, in.ReturnValuesOnConditionCheckFailure)
	}
	return out, err
}

// env is one test's store over a fresh dynalite table.
type env struct {
	table string
	store *Store
	calls *countingDB
	clock *fakeClock
}

// newEnv builds a store over dynalite (fallback GetItem path). mutate may
// adjust the Config.
func newEnv(t testing.TB, mutate func(*Config)) *env {
	t.Helper()
	return newEnvWith(t, dynalite.Client, mutate)
}

// newEnvAllOld builds a store whose client behaves like DynamoDB for ALL_OLD.
func newEnvAllOld(t testing.TB, mutate func(*Config)) *env {
	t.Helper()
	return newEnvWith(t, allOldDB{inner: dynalite.Client}, mutate)
}

func newEnvWith(t testing.TB, db DynamoDBAPI, mutate func(*Config)) *env {
	t.Helper()
	e := &env{table: newTable(t), clock: &fakeClock{}}
	e.calls = &countingDB{inner: db}
	cfg := Config{TableName: e.table, Now: e.clock.Now}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := NewStore(e.calls, cfg)
	if err != nil {
		t.Fatalf("NewStore: %v", err)
	}
	e.store = s
	return e
}

// rawItem reads an item directly (not through the store).
func (e *env) rawItem(t testing.TB, key string) map[string]types.AttributeValue {
	t.Helper()
	out, err := dynalite.Client.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(e.table), Key: map[string]types.AttributeValue{lambdaapi.IdempotencyKeyAttribute: attrS(key)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("raw GetItem %q: %v", key, err)
	}
	return out.Item
}

// putRaw writes an item directly, bypassing the store.
func (e *env) putRaw(t testing.TB, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := dynalite.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.table), Item: item}); err != nil {
		t.Fatalf("raw PutItem: %v", err)
	}
}

func sAttr(t testing.TB, item map[string]types.AttributeValue, name string) string {
	t.Helper()
	v, ok, err := stringAttr(item, name)
	if err != nil || !ok {
		t.Fatalf("attribute %s: ok=%v err=%v in %v", name, ok, err, item)
	}
	return v
}

func nAttr(t testing.TB, item map[string]types.AttributeValue, name string) int64 {
	t.Helper()
	v, ok, err := numberAttr(item, name)
	if err != nil || !ok {
		t.Fatalf("attribute %s: ok=%v err=%v in %v", name, ok, err, item)
	}
	return v
}
