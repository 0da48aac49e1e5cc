package consumers_test

import (
	"slices"
	"testing"

	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

// Every queue of config/catalog is read by a consumer of the registry, and
// every consumer reads a queue of the catalogue, accepting the versions of
// the event that queue carries (the contract's list, not a second one).
func TestRegistryMatchesTheCatalogue(t *testing.T) {
	carries := map[string]string{
		"Pedidos": eventsapi.TypePedidoConfirmado, "Correo": eventsapi.TypePedidoConfirmado,
		"AvisoERP": eventsapi.TypePedidoConfirmado, "StockMovements": eventsapi.TypeMovimientoStock,
		"Inicio": eventsapi.TypePedidoCreado,
	}
	read := map[string]bool{}
	for _, q := range catalog.Queues {
		c, ok := consumers.Find(q.Function)
		if !ok {
			t.Errorf("queue %s: its function %s is not in the registry", q.Logical, q.Function)
			continue
		}
		read[c.Function] = true
		typ, ok := carries[q.Logical]
		if !ok {
			t.Errorf("queue %s: which event does it carry?", q.Logical)
		}
		if want := eventsapi.AcceptedVersions(typ); !slices.Equal(c.SupportedVersions, want) || len(want) == 0 {
			t.Errorf("%s accepts %v, the contract of %s says %v", c.Function, c.SupportedVersions, typ, want)
		}
		if c.Content == nil || len(c.RequiredKeys) == 0 || c.IdempotencyKey == "" {
			t.Errorf("%s: its content check, required keys and idempotency key are all required", c.Function)
		}
	}
	for _, c := range consumers.All {
		if !read[c.Function] {
			t.Errorf("%s reads no queue of config/catalog", c.Function)
		}
	}
}
