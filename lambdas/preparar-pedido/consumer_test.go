package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/lambdas/queue/queuefake"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsbatch/dlqroute"
)

func TestLoadSettings(t *testing.T) {
	dlq := "https://sqs.eu-west-1.amazonaws.com/123456789012/mercadofresco-pedidos-fallidos"
	routes := `{"cola-mercadofresco-pedidos":"` + dlq + `"}`
	tests := []struct {
		name    string
		env     map[string]string
		want    settings
		wantErr string
	}{
		{name: "no idempotency table", env: map[string]string{}, wantErr: "IDEMPOTENCY_TABLE_NAME"},
		{name: "defaults", env: map[string]string{},
			want: settings{ConsumerVersion: "unknown", Concurrency: 8, SupportedVersions: []int{1}, DeadlineMargin: 2 * time.Second, LogLevel: slog.LevelInfo}},
		{name: "all set", env: map[string]string{"DLQ_URLS": routes, "CONSUMER_VERSION": "abc123", "BATCH_CONCURRENCY": "4",
			"SUPPORTED_VERSIONS": "1, 2", "DEADLINE_MARGIN": "3s", "LOG_LEVEL": "debug"},
			want: settings{DLQRoutes: dlqroute.Routes{"cola-mercadofresco-pedidos": dlq}, ConsumerVersion: "abc123", Concurrency: 4, SupportedVersions: []int{1, 2}, DeadlineMargin: 3 * time.Second, LogLevel: slog.LevelDebug}},
		{name: "bad concurrency", env: map[string]string{"BATCH_CONCURRENCY": "0"}, wantErr: "BATCH_CONCURRENCY"},
		{name: "bad versions", env: map[string]string{"SUPPORTED_VERSIONS": "uno"}, wantErr: "SUPPORTED_VERSIONS"},
		{name: "bad margin", env: map[string]string{"DEADLINE_MARGIN": "2"}, wantErr: "DEADLINE_MARGIN"},
		{name: "bad level", env: map[string]string{"LOG_LEVEL": "loud"}, wantErr: "LOG_LEVEL"},
		{name: "ARN instead of URL", env: map[string]string{"DLQ_URLS": `{"q":"arn:aws:sqs:eu-west-1:1:q"}`}, wantErr: "DLQ_URLS"},
		{name: "not JSON", env: map[string]string{"DLQ_URLS": dlq}, wantErr: "DLQ_URLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadSettings(func(k string) string {
				if k == "IDEMPOTENCY_TABLE_NAME" && tt.name != "no idempotency table" {
					return "mercadofresco-idempotencia-test"
				}
				return tt.env[k]
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to name %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got.DLQRoutes, tt.want.DLQRoutes) || got.ConsumerVersion != tt.want.ConsumerVersion || got.Concurrency != tt.want.Concurrency ||
				!slices.Equal(got.SupportedVersions, tt.want.SupportedVersions) || got.DeadlineMargin != tt.want.DeadlineMargin || got.LogLevel != tt.want.LogLevel {
				t.Errorf("settings = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// fakePreparer records calls and fails on demand.
type fakePreparer struct {
	mu    sync.Mutex
	keys  []string
	fails map[string]error
}

func (f *fakePreparer) Prepare(_ context.Context, key string, p *PedidoConfirmado) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, key)
	if err := f.fails[p.PedidoID]; err != nil {
		return "", err
	}
	return "ref-" + p.PedidoID, nil
}

func TestConsumer(t *testing.T) {
	clk := queuefake.NewManualClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	f := queuefake.New(queuefake.WithClock(clk))
	dlq, err := f.CreateQueue("mercadofresco-pedidos-fallidos", queuefake.QueueConfig{})
	if err != nil {
		t.Fatal(err)
	}
	prep := &fakePreparer{fails: map[string]error{
		"P-CANCELADO": ErrNoPreparable,
		"P-LENTO":     errors.New("almacen: timeout"),
	}}
	s, _ := loadSettings(func(k string) string {
		return map[string]string{"DLQ_URLS": `{"cola-mercadofresco-pedidos":"` + dlq + `"}`, "CONSUMER_VERSION": "test", "IDEMPOTENCY_TABLE_NAME": "t"}[k]
	})
	p, err := newProcessor(s, f, f, prep, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id, body string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body, EventSource: "aws:sqs",
			EventSourceARN: "arn:aws:sqs:eu-west-1:000000000000:cola-mercadofresco-pedidos",
			Attributes:     map[string]string{"ApproximateReceiveCount": "1"}}
	}
	line := `"lineas":[{"sku":"SKU-1","cantidad":2}]`
	resp, err := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		rec("ok", `{"version":1,"pedido_id":"P1",`+line+`,"canal":"app"}`),
		rec("v2", `{"version":2,"pedido_id":"P2",`+line+`}`),
		rec("sin-lineas", `{"version":1,"pedido_id":"P3","lineas":[]}`),
		rec("sin-pedido", `{"version":1,`+line+`}`),
		rec("pedido-numerico", `{"version":1,"pedido_id":42,`+line+`}`),
		rec("cancelado", `{"version":1,"pedido_id":"P-CANCELADO",`+line+`}`),
		rec("lento", `{"version":1,"pedido_id":"P-LENTO",`+line+`}`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.BatchItemFailures; len(got) != 1 || got[0].ItemIdentifier != "lento" {
		t.Fatalf("failures = %+v, want only the transient one", got)
	}
	slices.Sort(prep.keys)
	if want := []string{"preparacion:P-CANCELADO", "preparacion:P-LENTO", "preparacion:P1"}; !slices.Equal(prep.keys, want) {
		t.Errorf("Prepare keys = %v, want %v", prep.keys, want)
	}
	st, _ := f.Inspect(dlq)
	reasons := map[string]string{}
	for _, m := range st {
		reasons[m.MessageAttributes[sqsbatch.AttrOriginalMessageID].StringValue] = m.MessageAttributes[sqsbatch.AttrFailureReason].StringValue
	}
	want := map[string]string{
		"v2":              "unknown major version 2",
		"sin-lineas":      "order has no lines",
		"sin-pedido":      `missing required key "pedido_id"`,
		"pedido-numerico": "poison: cannot derive the idempotency key: body does not match the expected schema: json: cannot unmarshal number",
		"cancelado":       "order cannot be prepared",
	}
	if len(reasons) != len(want) {
		t.Fatalf("DLQ reasons = %v", reasons)
	}
	for id, r := range want {
		if !strings.Contains(reasons[id], r) {
			t.Errorf("DLQ reason of %s = %q, want ~%q", id, reasons[id], r)
		}
	}
}
