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

	"github.com/mercadofresco/integration/lambdas/internal/pgtest"
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
		db:      pool,
		cfg:     outbox.CleanupConfig{BatchSize: 2},
		metrics: outbox.NewEMFWriter(&out, outbox.MetricNamespace, map[string]string{outbox.DimensionEnvironment: "test"}),
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

func TestEnvInt(t *testing.T) {
	tests := []struct {
		val     string
		want    int
		wantErr bool
	}{{"", 7, false}, {"3", 3, false}, {"0", 0, true}, {"x", 0, true}, {"-1", 0, true}}
	for _, tc := range tests {
		t.Setenv("RETENTION_DAYS", tc.val)
		got, err := envInt("RETENTION_DAYS", 7)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("envInt(%q) = %d, %v", tc.val, got, err)
		}
	}
}
