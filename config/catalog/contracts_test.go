package catalog

import (
	"slices"
	"testing"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

// The consumers' accepted versions (what mf-dlq classify checks) are the
// contract's list, the one their code checks, not a second one.
func TestConsumersAcceptTheContractsVersions(t *testing.T) {
	want := map[string]string{
		"Pedidos": eventsapi.TypePedidoConfirmado, "Correo": eventsapi.TypePedidoConfirmado,
		"AvisoERP": eventsapi.TypePedidoConfirmado, "StockMovements": eventsapi.TypeMovimientoStock,
		"Inicio": eventsapi.TypePedidoCreado,
	}
	for _, q := range Queues {
		typ, ok := want[q.Logical]
		if !ok {
			t.Errorf("queue %s: which event does it carry?", q.Logical)
			continue
		}
		for _, c := range q.Consumers {
			if got := c.SupportedVersions; !slices.Equal(got, eventsapi.AcceptedVersions(typ)) || len(got) == 0 {
				t.Errorf("%s accepts %v, the contract of %s says %v", c.Function, got, typ, eventsapi.AcceptedVersions(typ))
			}
		}
	}
}
