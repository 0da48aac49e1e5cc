package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/outbox"
	"github.com/mercadofresco/integration/lambdas/signing"
)

// details keeps every entry's detail.
type details struct {
	mu  sync.Mutex
	got []string
}

func (d *details) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range in.Entries {
		d.got = append(d.got, aws.ToString(e.Detail))
	}
	return &eventbridge.PutEventsOutput{Entries: make([]types.PutEventsResultEntry, len(in.Entries))}, nil
}

// The as-deployed run's publisher does what the deployed one does to every
// PedidoCreado the bench writes: it signs its charge with the key
// benchSecret holds.
func TestDeployedPublisherSignsEveryOrder(t *testing.T) {
	ctx := context.Background()
	pool := localaws.NewPool(t, localaws.NewPostgresDatabase(t, "mf_bench_outbox_"), "", 4)
	if _, err := outbox.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	const n = 5
	if _, err := outboxWriter(pool)(ctx, 0, n); err != nil {
		t.Fatal(err)
	}
	cfg, err := deployedConfig()
	if err != nil {
		t.Fatal(err)
	}
	sink := &details{}
	p, err := outbox.NewPublisher(pool, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := p.PublishOnce(ctx); err != nil || res.Published != n {
		t.Fatalf("PublishOnce = %+v, %v; want %d published", res, err, n)
	}
	key := signing.Key{ID: "v1", Secret: []byte(strings.Repeat("k", signing.MinKeyBytes))}
	for _, d := range sink.got {
		var ev struct {
			ID     string `json:"id_evento"`
			Pedido string `json:"pedido_id"`
			Total  int64  `json:"total_centimos"`
			Moneda string `json:"moneda"`
			Token  string `json:"token_tarjeta"`
			Firma  string `json:"firma"`
		}
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatal(err)
		}
		c := signing.Charge{EventID: ev.ID, OrderID: ev.Pedido, AmountCents: ev.Total, Currency: ev.Moneda, CardToken: ev.Token}
		if err := signing.Verify([]signing.Key{key}, c, ev.Firma); err != nil {
			t.Errorf("event %s: signature %q: %v", ev.ID, ev.Firma, err)
		}
	}
}
