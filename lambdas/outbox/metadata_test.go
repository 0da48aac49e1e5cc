package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
)

// topLevelKeys returns the detail's top-level keys in order, duplicates
// included (a map would hide them).
func topLevelKeys(t *testing.T, raw string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("detail is not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// A payload that carries the metadata keys (a row written before Add and
// the constraint refused them) cannot override the publisher's values nor
// add a duplicate key that a last-wins decoder would pick.
func TestEncodeDetailPublisherMetadataWins(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 30, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name, payload string
		members       map[string]string // expected non-metadata members (raw JSON)
	}{
		{"all three forged", `{"creado_en": "1999-01-01", "id_evento": "forged", "version": 1, "agregado_id": "otro"}`,
			map[string]string{"version": "1"}},
		{"one forged among nested", `{"id_evento": 7, "x": {"id_evento": "nested stays"}}`,
			map[string]string{"x": `{"id_evento": "nested stays"}`}},
		{"mentioned as a value only", `{"nota": "\"id_evento\" is a key name"}`,
			map[string]string{"nota": `"\"id_evento\" is a key name"`}},
		{"only forged keys", `{"agregado_id": "x"}`, map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := claimedRow{id: uuid.NewString(), aggregateID: "ped-1", payload: tc.payload, createdAt: created}
			raw := encodeDetail(r, "")
			keys := topLevelKeys(t, raw)
			seen := map[string]int{}
			for _, k := range keys {
				seen[k]++
				if seen[k] > 1 {
					t.Fatalf("duplicate key %q in %s", k, raw)
				}
			}
			var meta Detail
			if err := json.Unmarshal([]byte(raw), &meta); err != nil {
				t.Fatal(err)
			}
			if meta.EventID != r.id || meta.AggregateID != "ped-1" || !meta.CreatedAt.Equal(created) {
				t.Fatalf("metadata %+v, want the row's (%s): %s", meta, r.id, raw)
			}
			var got map[string]json.RawMessage
			_ = json.Unmarshal([]byte(raw), &got)
			for _, k := range ReservedDetailKeys {
				delete(got, k)
			}
			if len(got) != len(tc.members) {
				t.Fatalf("members %v, want %v", got, tc.members)
			}
			for k, v := range tc.members {
				if string(got[k]) != v {
					t.Fatalf("member %s = %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

// The database refuses a payload with a metadata key from any writer, not
// only from Add.
func TestDatabaseRefusesPayloadsWithMetadataKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := migratedPool(t)
	for _, k := range ReservedDetailKeys {
		_, err := pool.Exec(ctx, `INSERT INTO outbox (id, agregado_id, tipo, payload) VALUES ($1::uuid, 'ped-1', 'PedidoCreado', $2::jsonb)`,
			uuid.NewString(), `{"version": 1, "`+k+`": "x"}`)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != "outbox_payload_sin_metadatos" {
			t.Errorf("insert with payload key %q: %v, want the check violation of outbox_payload_sin_metadatos", k, err)
		}
	}
	// A nested key of the same name is the payload's own business.
	if _, err := pool.Exec(ctx, `INSERT INTO outbox (id, agregado_id, tipo, payload) VALUES ($1::uuid, 'ped-1', 'PedidoCreado', '{"x": {"id_evento": 1}}')`,
		uuid.NewString()); err != nil {
		t.Fatalf("nested key refused: %v", err)
	}
}
