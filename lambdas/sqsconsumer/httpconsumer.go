package sqsconsumer

import (
	"cmp"
	"context"
	"errors"
	"log/slog"

	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// CodeRejected is the error_codigo recorded when a dependency refused a
// request (httpdep.ErrRejected).
const CodeRejected = "rechazado"

// HTTPConsumer is a consumer of the fan-out's PedidoConfirmado that POSTs
// one request per confirmed order to an HTTP dependency, once (Once, with
// Key(pedido_id) as the idempotency key and the Idempotency-Key). An order
// its registry entry's Content refuses is poison; a refusal (httpdep.ErrRejected) is recorded
// FALLIDO with CodeRejected and dead-lettered; an open circuit makes the
// order wait (Plan); a 429 past the attempts hides it for the
// dependency's Retry-After; an order older than the replay window is
// refused. Its two values are Preparation and ERPNotice.
type HTTPConsumer struct {
	// Dependency names the dependency (its breaker and metrics) and Prefix
	// its variables (<Prefix>_URL, _SECRET_ARN, ...).
	Dependency, Prefix string
	Path               string
	// Consumer is its entry in the registry: the keys and versions it
	// requires and its check of an order's content.
	Consumer consumers.Consumer
	Key      func(pedidoID string) (string, error)
	Request  func(p *eventsapi.PedidoConfirmado) any
	// Done is the log message of a success; AnswerKey names the
	// dependency's id in it.
	Done, AnswerKey string
}

// Answer is a dependency's answer, and what the idempotency record stores
// and replays.
type Answer struct {
	ID     string `json:"id"`
	Estado string `json:"estado,omitempty"`
}

// Processor returns the batch processor of the consumer over the
// dependency's client.
func (c *HTTPConsumer) Processor(s Settings, d OnceDeps, dep *httpdep.Client) (*sqsbatch.Processor, error) {
	if dep == nil {
		return nil, errors.New("sqsconsumer: an HTTP consumer needs the dependency's client")
	}
	steps, err := s.Steps(d.Store, d.Plan)
	if err != nil {
		return nil, err
	}
	return s.Batch(sqsbatch.Config{
		Handler: sqsbatch.JSON(func(ctx context.Context, rec *sqsbatch.Record, p *eventsapi.PedidoConfirmado) error {
			body := c.Request(p)
			res, err := Once(ctx, steps, rec, body, func(ctx context.Context, key string) (Answer, error) {
				var out Answer
				err := dep.Post(ctx, c.Path, key, body, &out)
				if errors.Is(err, httpdep.ErrRejected) {
					err = failure.Permanent(CodeRejected, err)
				}
				return out, err
			})
			if err == nil {
				rec.Logger.Info(c.Done, slog.String("pedido_id", p.PedidoID), slog.String(c.AnswerKey, res.ID), slog.Int("lineas", len(p.Lineas)))
			}
			return err
		}),
		DLQ:            d.DLQ,
		Visibility:     d.Visibility,
		Envelope:       c.Consumer.Envelope(),
		IdempotencyKey: KeyByPedido(c.Key),
		Logger:         cmp.Or(d.Logger, slog.Default()),
	})
}

// FromRuntime builds the consumer with real clients (its main): see
// Runtime.HTTPDeps.
func (c *HTTPConsumer) FromRuntime(ctx context.Context, rt *Runtime) (*sqsbatch.Processor, error) {
	d, client, err := rt.HTTPDeps(c.Prefix, c.Dependency)
	if err != nil {
		return nil, err
	}
	return c.Processor(rt.Settings, d, client)
}

// The warehouse's and the ERP's endpoints.
const (
	PathPreparaciones = "/v1/preparaciones"
	PathAvisos        = "/v1/avisos-pedido"
)

// Preparation is the consumer of cola-mercadofresco-pedidos (lambdas/
// preparar-pedido): it asks the warehouse to prepare every confirmed
// order (key preparacion:<pedido_id>). An order without lines is poison.
// The warehouse API: docs/design.md#order-preparation.
var Preparation = &HTTPConsumer{
	Dependency: lambdaapi.NameAlmacen, Prefix: lambdaapi.PrefixAlmacen, Path: PathPreparaciones,
	Key: idempotency.KeyPreparacion, Done: "order sent to preparation", AnswerKey: "referencia_preparacion",
	Consumer: consumers.Preparation,
	Request: func(p *eventsapi.PedidoConfirmado) any {
		req := Solicitud{PedidoID: p.PedidoID, Lineas: make([]Linea, len(p.Lineas))}
		for i, l := range p.Lineas {
			req.Lineas[i] = Linea{SKU: l.SKU, Cantidad: l.Cantidad}
		}
		return req
	},
}

// Solicitud is the body of POST /v1/preparaciones.
type Solicitud struct {
	PedidoID string  `json:"pedido_id"`
	Lineas   []Linea `json:"lineas"`
}

// Linea is one order line sent to the warehouse.
type Linea struct {
	SKU      string `json:"sku"`
	Cantidad int64  `json:"cantidad"`
}

// ERPNotice is the consumer of cola-mercadofresco-aviso-erp (lambdas/
// aviso-erp): it notifies the ERP of every confirmed order (key
// aviso-erp:<pedido_id>); while the ERP's circuit is open the notice
// waits, so an outage of up to a day dead-letters nothing. A notice the
// ERP could not book is poison. The ERP API: docs/design.md#erp-notice.
var ERPNotice = &HTTPConsumer{
	Dependency: lambdaapi.NameERP, Prefix: lambdaapi.PrefixERP, Path: PathAvisos,
	Key: idempotency.KeyAvisoERP, Done: "ERP notified", AnswerKey: "registro_erp",
	Consumer: consumers.ERPNotice,
	Request: func(p *eventsapi.PedidoConfirmado) any {
		return Aviso{PedidoID: p.PedidoID, ClienteID: p.Cliente.ID, TotalCentimos: p.TotalCentimos, Moneda: p.Moneda,
			ReferenciaCobro: p.ReferenciaCobro, ConfirmadoEn: p.ConfirmadoEn, Lineas: p.Lineas}
	},
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
