package catalog

import (
	"slices"
	"testing"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
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

// The keys mf-dlq calls required include every key the consumer's code
// requires (lambdaapi's lists, which the consumers pass to sqsbatch): a
// message the consumer dead-letters for a missing key is poison to the
// tool too, never "transient, redrive it".
func TestConsumersRequireTheCodesKeys(t *testing.T) {
	code := map[string][]string{
		"mf-preparar-pedido": lambdaapi.RequiredKeysConfirmado(), "mf-aviso-erp": lambdaapi.RequiredKeysConfirmado(),
		"mf-correo-confirmacion": lambdaapi.RequiredKeysCorreo(), "mf-movimientos-stock": lambdaapi.RequiredKeysStock(),
		"mf-iniciar-pedido": lambdaapi.RequiredKeysInicio(),
	}
	for _, q := range Queues {
		for _, c := range q.Consumers {
			keys, ok := code[c.Function]
			if !ok {
				t.Errorf("%s: which keys does its code require?", c.Function)
				continue
			}
			for _, k := range keys {
				if !slices.Contains(c.RequiredKeys, k) {
					t.Errorf("%s requires %q in its code; the catalog lists %v", c.Function, k, c.RequiredKeys)
				}
			}
		}
	}
}
