package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/lambdas/internal/pgtest"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

// testPool returns a pool on a fresh, migrated schema of mf_outbox_test.
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t, "mf_outbox_test", "op_", 4)
	if _, err := outbox.Migrate(context.Background(), pool); err != nil {
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
