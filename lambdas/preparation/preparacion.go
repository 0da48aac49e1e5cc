// Package preparation is the consumer of cola-mercadofresco-pedidos: for
// every confirmed order it asks the warehouse to prepare it, once
// (sqsconsumer.Once with the key preparacion:<pedido_id>, also the
// warehouse's Idempotency-Key; POST /v1/preparaciones through
// lambdas/httpdep). An order without lines is poison; a refusal is recorded
// FALLIDO and dead-lettered; an open circuit makes the order wait
// (lambdas/degrade); an order older than the replay window is refused.
// Reasoning and the warehouse API: docs/design.md#order-preparation.
package preparation

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

// PathPreparaciones is the warehouse's endpoint.
const PathPreparaciones = "/v1/preparaciones"

// Pedido is the confirmed order as this consumer validates it.
type Pedido struct{ eventsapi.PedidoConfirmado }

// Linea is one order line sent to the warehouse.
type Linea struct {
	SKU      string `json:"sku"`
	Cantidad int64  `json:"cantidad"`
}

// Validate implements sqsbatch.Validator: an order no warehouse could
// prepare is poison, not something to retry.
func (p *Pedido) Validate() error {
	if len(p.Lineas) == 0 {
		return errors.New("order has no lines")
	}
	for i, l := range p.Lineas {
		if l.SKU == "" || l.Cantidad <= 0 {
			return fmt.Errorf("line %d: sku %q, cantidad %d: want a SKU and a positive quantity", i, l.SKU, l.Cantidad)
		}
	}
	return nil
}

// Solicitud is the body of POST /v1/preparaciones.
type Solicitud struct {
	PedidoID string  `json:"pedido_id"`
	Lineas   []Linea `json:"lineas"`
}

// Preparacion is the warehouse's answer, and what the idempotency record
// stores and replays.
type Preparacion struct {
	ID     string `json:"id"`
	Estado string `json:"estado,omitempty"`
}

// NewProcessor returns the batch processor of the consumer over the
// warehouse's client (d: see sqsconsumer.OnceDeps).
func NewProcessor(s sqsconsumer.Settings, d sqsconsumer.OnceDeps, almacen *httpdep.Client) (*sqsbatch.Processor, error) {
	return sqsconsumer.PostProcessor(s, d, almacen, PathPreparaciones, idempotency.KeyPreparacion,
		func(p *Pedido) Solicitud {
			req := Solicitud{PedidoID: p.PedidoID, Lineas: make([]Linea, len(p.Lineas))}
			for i, l := range p.Lineas {
				req.Lineas[i] = Linea{SKU: l.SKU, Cantidad: l.Cantidad}
			}
			return req
		},
		func(rec *sqsbatch.Record, p *Pedido, res Preparacion) {
			rec.Logger.Info("order sent to preparation", slog.String("pedido_id", p.PedidoID),
				slog.String("referencia_preparacion", res.ID), slog.Int("lineas", len(p.Lineas)))
		})
}

// FromRuntime builds the consumer with real clients (the preparar-pedido
// main): see sqsconsumer.Runtime.HTTPDeps, with the warehouse's ALMACEN_*
// variables.
func FromRuntime(ctx context.Context, rt *sqsconsumer.Runtime) (*sqsbatch.Processor, error) {
	d, client, err := rt.HTTPDeps(lambdaapi.PrefixAlmacen, lambdaapi.NameAlmacen)
	if err != nil {
		return nil, err
	}
	return NewProcessor(rt.Settings, d, client)
}
