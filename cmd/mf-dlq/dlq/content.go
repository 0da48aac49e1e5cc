package dlq

import (
	"github.com/mercadofresco/integration/lambdas/confirmationmail"
	"github.com/mercadofresco/integration/lambdas/erpnotice"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/orderstart"
	"github.com/mercadofresco/integration/lambdas/preparation"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// contentChecks are the queue consumers' own checks of a body, by function
// (config/catalog's Consumer.Function): the message type each decodes into
// with its Validate (sqsbatch.JSON), or the starter's DecodeEvent. A body
// one refuses is what that consumer dead-letters as poison, so classify
// calls it poison instead of offering to redrive it.
var contentChecks = map[string]func(body string) error{
	"mf-preparar-pedido":     sqsbatch.CheckJSON[preparation.Pedido],
	"mf-correo-confirmacion": sqsbatch.CheckJSON[confirmationmail.Pedido],
	"mf-aviso-erp":           sqsbatch.CheckJSON[erpnotice.Pedido],
	"mf-movimientos-stock":   sqsbatch.CheckJSON[eventsapi.MovimientoStock],
	"mf-iniciar-pedido": func(body string) error {
		_, _, err := orderstart.DecodeEvent([]byte(body))
		return err
	},
}
