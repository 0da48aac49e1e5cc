package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/outbox"
)

const server = "postgres://postgres@127.0.0.1:5432/"

func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server+"postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var pgErr *pgconn.PgError
	if _, err := admin.Exec(ctx, "CREATE DATABASE mf_outbox_test"); err != nil && !(errors.As(err, &pgErr) && (pgErr.Code == "42P04" || pgErr.Code == "23505")) {
		t.Fatal(err)
	}
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	schema := "op_" + hex.EncodeToString(b)
	pool, err := pgxpool.New(ctx, server+"mf_outbox_test?sslmode=disable&search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		pool.Close()
	})
	if _, err := outbox.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

type countingSink struct{ n int }

func (s *countingSink) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	s.n += len(in.Entries)
	return &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}, nil
}

// One invocation publishes what is pending, keeps polling, and returns
// margin before the Lambda deadline with the counts.
func TestHandlePublishesAndStopsBeforeTheDeadline(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	for i := range 25 {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := outbox.Add(ctx, tx, outbox.Event{AggregateID: fmt.Sprintf("ped-%d", i), Type: "PedidoCreado", Payload: json.RawMessage(`{"version":1}`)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sink := &countingSink{}
	pub, err := outbox.NewPublisher(pool, sink, outbox.Config{BusName: "bus", Source: "src", PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := &handler{pool: pool, pub: pub, margin: 500 * time.Millisecond}
	deadline := time.Now().Add(1200 * time.Millisecond)
	lctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	res, err := h.handle(lctx)
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(deadline); left < 300*time.Millisecond {
		t.Fatalf("handler returned %s before the deadline, want about the 500 ms margin", left)
	}
	if res.Publicados != 25 || res.Reclamados != 25 || sink.n != 25 {
		t.Fatalf("resultado %+v, sink %d; want 25 published", res, sink.n)
	}
}
