package schematest

import (
	"strings"
	"testing"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

func TestCheck(t *testing.T) {
	good := `{"version":1,"tipo":"reserva","pedido_id":"P","sku":"S","cantidad":1,"secuencia":1,"emitido_en":"2026-12-01T10:00:00Z","nuevo":true}`
	tests := []struct {
		name, doc, want string
	}{
		{"valid, unknown fields allowed", good, ""},
		{"missing required", strings.Replace(good, `"sku":"S",`, "", 1), "sku"},
		{"wrong version", strings.Replace(good, `"version":1`, `"version":2`, 1), "version"},
		{"enum", strings.Replace(good, `"reserva"`, `"robo"`, 1), "tipo"},
		{"type", strings.Replace(good, `"cantidad":1`, `"cantidad":"1"`, 1), "cantidad"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(eventsapi.TypeMovimientoStock, eventsapi.MovimientoStockVersion, []byte(tc.doc))
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
