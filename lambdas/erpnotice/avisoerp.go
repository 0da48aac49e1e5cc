// Package erpnotice is the consumer of cola-mercadofresco-aviso-erp: it
// notifies the ERP of every confirmed order, once (sqsconsumer.Once with the
// key aviso-erp:<pedido_id>, also the ERP's Idempotency-Key; POST
// /v1/avisos-pedido through lambdas/httpdep). While the ERP's circuit is open
// the notice waits (lambdas/degrade), so an outage of up to a day
// dead-letters nothing; a 429 after the attempts hides it for the ERP's
// Retry-After. Reasoning and the ERP API: docs/design.md#erp-notice.
package erpnotice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// PathAvisos is the ERP's endpoint.
const PathAvisos = "/v1/avisos-pedido"

// Pedido is the confirmed order as this consumer validates it.
type Pedido struct{ eventsapi.PedidoConfirmado }

// Validate implements sqsbatch.Validator: a notice the ERP could not book
// is poison.
func (p *Pedido) Validate() error {
	var problems []error
	if p.ReferenciaCobro == "" {
		problems = append(problems, errors.New("referencia_cobro is empty (a confirmed order is charged)"))
	}
	if p.TotalCentimos <= 0 {
		problems = append(problems, fmt.Errorf("total_centimos %d is not positive", p.TotalCentimos))
	}
	if !eventsapi.IsCurrency(p.Moneda) {
		problems = append(problems, fmt.Errorf("moneda %q is not an ISO 4217 code", p.Moneda))
	}
	if len(p.Lineas) == 0 {
		problems = append(problems, errors.New("order has no lines"))
	}
	return errors.Join(problems...)
}

// Aviso is the body of POST /v1/avisos-pedido.
type Aviso struct {
	PedidoID        string            `json:"pedido_id"`
	ClienteID       string            `json:"cliente_id,omitempty"`
	TotalCentimos   int64             `json:"total_centimos"`
	Moneda          string            `json:"moneda"`
	ReferenciaCobro string            `json:"referencia_cobro"`
	ConfirmadoEn    string            `json:"confirmado_en,omitempty"`
	Lineas          []eventsapi.Linea `json:"lineas"`
}

// Registro is the ERP's answer, stored and replayed by the idempotency record.
type Registro struct {
	ID string `json:"id"`
}

// NewProcessor returns the batch processor of the consumer over the ERP's
// client (d: see sqsconsumer.OnceDeps).
func NewProcessor(s sqsconsumer.Settings, d sqsconsumer.OnceDeps, erp *httpdep.Client) (*sqsbatch.Processor, error) {
	return sqsconsumer.PostProcessor(s, d, erp, PathAvisos, idempotency.KeyAvisoERP,
		func(p *Pedido) Aviso {
			return Aviso{PedidoID: p.PedidoID, ClienteID: p.Cliente.ID, TotalCentimos: p.TotalCentimos, Moneda: p.Moneda,
				ReferenciaCobro: p.ReferenciaCobro, ConfirmadoEn: p.ConfirmadoEn, Lineas: p.Lineas}
		},
		func(rec *sqsbatch.Record, p *Pedido, res Registro) {
			rec.Logger.Info("ERP notified", slog.String("pedido_id", p.PedidoID), slog.String("registro_erp", res.ID))
		})
}

// FromRuntime builds the consumer with real clients (the aviso-erp main):
// see sqsconsumer.Runtime.HTTPDeps, with the ERP's ERP_* variables.
func FromRuntime(ctx context.Context, rt *sqsconsumer.Runtime) (*sqsbatch.Processor, error) {
	d, client, err := rt.HTTPDeps(lambdaapi.PrefixERP, lambdaapi.NameERP)
	if err != nil {
		return nil, err
	}
	return NewProcessor(rt.Settings, d, client)
}
