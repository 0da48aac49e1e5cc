package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mercadofresco/integration/internal/pgtest"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/outbox"
)

// testPool returns a pool on a fresh, migrated schema of mf_outbox_test.
func testPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.Pool(t, "mf_outbox_test", "oc_", 4)
	if _, err := outbox.Migrate(context.Background(), pool); err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestHandleDeletesOldPublishedRowsAndReportsMetrics(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	if _, err := pool.Exec(ctx, `
INSERT INTO outbox (id, agregado_id, tipo, payload, creado_en, publicado_en)
SELECT gen_random_uuid(), 'p' || g, 'PedidoCreado', '{}', now() - interval '10 days',
       CASE WHEN g <= 7 THEN now() - interval '9 days' END
FROM generate_series(1, 10) g`); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	h := &handler{
		margin:  stopMargin,
		db:      pool,
		cfg:     outbox.CleanupConfig{BatchSize: 2},
		metrics: metrics.ForEnvironment(&out, "test"),
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := h.handle(lctx)
	if err != nil || res.Borrados != 7 {
		t.Fatalf("handle = %+v, %v; want 7 deleted", res, err)
	}
	if !strings.Contains(out.String(), `"DeletedEvents":7`) || !strings.Contains(out.String(), `"PendingEvents":3`) {
		t.Fatalf("EMF line = %s", out.String())
	}
}

func TestSettings(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    outbox.CleanupConfig
		wantErr bool
	}{
		{map[string]string{}, outbox.CleanupConfig{Retention: 7 * 24 * time.Hour, BatchSize: 1000}, false},
		{map[string]string{"RETENTION_DAYS": "3", "BATCH_SIZE": "10"}, outbox.CleanupConfig{Retention: 3 * 24 * time.Hour, BatchSize: 10}, false},
		{map[string]string{"RETENTION_DAYS": "0"}, outbox.CleanupConfig{}, true},
		{map[string]string{"BATCH_SIZE": "x"}, outbox.CleanupConfig{}, true},
	}
	for _, tc := range tests {
		env := lambdaenv.FromMap(tc.env)
		got := settings(env)
		if err := env.Err(); (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("settings(%v) = %+v, %v", tc.env, got, err)
		}
	}
}

// A cleanup stopped by its margin before the Lambda deadline is a success
// (the rest goes the next day); the Lambda's own context ending is not.
func TestHandleStopsAtTheMarginWithoutFailing(t *testing.T) {
	ctx := context.Background()
	pool := testPool(t)
	var out bytes.Buffer
	// A deadline already inside the margin: Cleanup sees a done context
	// while the invocation still has half an hour.
	h := &handler{margin: time.Hour, db: pool, cfg: outbox.CleanupConfig{}, metrics: metrics.ForEnvironment(&out, "test"),
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	if _, err := h.handle(lctx); err != nil {
		t.Fatalf("stopping at the margin failed the invocation: %v", err)
	}
}
