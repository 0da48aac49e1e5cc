package idempotency

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestKeyHelpers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		got     func() (string, error)
		want    string
		wantErr bool
	}{
		{"cobro", func() (string, error) { return KeyCobro("PED-2026-084417") }, "cobro:PED-2026-084417", false},
		{"correo", func() (string, error) { return KeyCorreoConfirmacion("PED-2026-084417") }, "correo-confirmacion:PED-2026-084417", false},
		{"aviso erp", func() (string, error) { return KeyAvisoERP("PED-2026-084417") }, "aviso-erp:PED-2026-084417", false},
		{"empty pedido", func() (string, error) { return KeyCobro("") }, "", true},
		{"colon makes the key ambiguous", func() (string, error) { return KeyCobro("PED-1:SKU-1") }, "", true},
		{"trailing blank", func() (string, error) { return KeyCobro("PED-1 ") }, "", true},
		{"invalid UTF-8", func() (string, error) { return KeyCobro("PED-\xff") }, "", true},
		{"too long", func() (string, error) { return KeyCobro(strings.Repeat("9", MaxKeyBytes)) }, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidKey) {
					t.Fatalf("want ErrInvalidKey, got %q, %v", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}

func TestCanonicalHash(t *testing.T) {
	type linea struct {
		SKU      string  `json:"sku"`
		Cantidad int     `json:"cantidad"`
		Precio   float64 `json:"precio"`
	}
	base := mustHash(t, map[string]any{"pedido_id": "PED-1", "lineas": []any{map[string]any{"sku": "A", "cantidad": 2, "precio": 4.1}}})
	for _, tc := range []struct {
		name string
		v    any
		same bool
	}{
		{"struct instead of map", map[string]any{"lineas": []linea{{"A", 2, 4.1}}, "pedido_id": "PED-1"}, true},
		{"raw JSON, other key order and spacing", json.RawMessage(` {"lineas":[{"precio":4.10,"cantidad":2.0,"sku":"A"}], "pedido_id":"PED-1"}`), true},
		{"[]byte JSON with exponent", []byte(`{"pedido_id":"PED-1","lineas":[{"sku":"A","cantidad":2e0,"precio":41e-1}]}`), true},
		{"different quantity", map[string]any{"pedido_id": "PED-1", "lineas": []any{map[string]any{"sku": "A", "cantidad": 3, "precio": 4.1}}}, false},
		{"array order matters", map[string]any{"pedido_id": "PED-1", "lineas": []any{map[string]any{"sku": "A", "cantidad": 2, "precio": 4.1}, nil}}, false},
		{"extra field", map[string]any{"pedido_id": "PED-1", "version": 2, "lineas": []any{map[string]any{"sku": "A", "cantidad": 2, "precio": 4.1}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustHash(t, tc.v); (got == base) != tc.same {
				t.Fatalf("hash equal to base = %v, want %v", got == base, tc.same)
			}
		})
	}
	// Integers beyond 2^53 keep every digit.
	if mustHash(t, json.RawMessage(`9007199254740993`)) == mustHash(t, json.RawMessage(`9007199254740992`)) {
		t.Error("large integers collide")
	}
	for _, bad := range []any{json.RawMessage(`{"a":`), []byte(`1 2`), make(chan int)} {
		if _, err := CanonicalHash(bad); err == nil {
			t.Errorf("CanonicalHash(%v) accepted", bad)
		}
	}
}

func mustHash(t *testing.T, v any) string {
	t.Helper()
	h, err := CanonicalHash(v)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
