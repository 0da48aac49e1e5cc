// Package consumers is the registry of the queue consumers: for each
// deployed function that reads a queue (config/catalog pairs the queues
// with these functions), the event versions and body keys without which it
// dead-letters a message, its replay window, its idempotency key and its
// own check of a body's content. The consumers' code reads its entry
// (lambdas/sqsconsumer, confirmationmail, stock, orderstart), the mains on
// sqsconsumer refuse a function missing here (Start), and mf-dlq classify
// judges a dead-lettered message by the same entry, so its verdict is the
// consumer's. Reasoning: docs/design.md#consumer-registry.
package consumers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// Consumer is one deployed function that reads a queue.
type Consumer struct {
	// Function is the SPEC name of the function (environments add their
	// suffix): "mf-" and the folder of its main under lambdas/.
	Function string
	// IdempotencyKey is the shape of the key its effect is recorded under
	// ("preparacion:<pedido_id>" in mercadofresco-idempotencia).
	IdempotencyKey string
	// Window is its replay window: it refuses (dead-letters as
	// expired-idempotency-window) a message whose event is older than this,
	// measured from the body's CreatedAtKey, and its records live as long,
	// so a redriven duplicate inside the window is recognised. 0: no
	// window, its records never expire.
	Window time.Duration
	// CreatedAtKey is the dotted path of the event's creation time
	// (RFC 3339) in the body.
	CreatedAtKey string
	// SupportedVersions are the major event versions it accepts: the
	// contract's list (eventsapi.AcceptedVersions).
	SupportedVersions []int
	// VersionKey is the dotted path of the version in the body; "" means
	// "version".
	VersionKey string
	// RequiredKeys are the body keys without which it dead-letters a message.
	RequiredKeys []string
	// Content says why it refuses body once the keys and the version
	// passed (it dead-letters it as poison), or nil when it would handle
	// it.
	Content func(body string) error
}

// Envelope are the body rules its batch processor checks before the
// handler (sqsbatch.Config.Envelope).
func (c Consumer) Envelope() sqsbatch.EnvelopeRules {
	return sqsbatch.EnvelopeRules{SupportedVersions: c.SupportedVersions, VersionKey: c.VersionKey, RequiredKeys: c.RequiredKeys, Content: c.Content}
}

// The consumers.
var (
	// Preparation asks the warehouse to prepare every confirmed order
	// (lambdas/preparar-pedido).
	Preparation = Consumer{
		Function:          "mf-preparar-pedido",
		IdempotencyKey:    "preparacion:<pedido_id>",
		Window:            lambdaapi.WindowPreparacion,
		CreatedAtKey:      lambdaapi.KeyConfirmadoEn,
		SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoConfirmado),
		RequiredKeys:      []string{"pedido_id", lambdaapi.KeyConfirmadoEn},
		Content:           confirmed(checkPreparation),
	}
	// Mail sends every confirmed order's e-mail (lambdas/correo-confirmacion).
	Mail = Consumer{
		Function:          "mf-correo-confirmacion",
		IdempotencyKey:    "correo-confirmacion:<pedido_id>",
		Window:            lambdaapi.WindowCorreo,
		CreatedAtKey:      lambdaapi.KeyConfirmadoEn,
		SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoConfirmado),
		RequiredKeys:      []string{"pedido_id", "cliente.email", lambdaapi.KeyConfirmadoEn},
		Content:           confirmed(checkMail),
	}
	// ERPNotice notifies the ERP of every confirmed order (lambdas/aviso-erp).
	ERPNotice = Consumer{
		Function:          "mf-aviso-erp",
		IdempotencyKey:    "aviso-erp:<pedido_id>",
		Window:            lambdaapi.WindowAvisoERP,
		CreatedAtKey:      lambdaapi.KeyConfirmadoEn,
		SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoConfirmado),
		RequiredKeys:      []string{"pedido_id", lambdaapi.KeyConfirmadoEn},
		Content:           confirmed(checkERPNotice),
	}
	// Stock applies the stock movements (lambdas/movimientos-stock). Its
	// records are the line items of mercadofresco-stock, which never
	// expire: a movement is applied only if its secuencia is newer.
	Stock = Consumer{
		Function:          "mf-movimientos-stock",
		IdempotencyKey:    "reserva:<pedido_id>:<sku> (liberacion:, ajuste:<referencia>:<sku>)",
		SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypeMovimientoStock),
		RequiredKeys:      []string{"tipo", "sku"},
		Content: func(body string) error {
			var m eventsapi.MovimientoStock
			return decode(body, &m, func() error { return m.Validate() })
		},
	}
	// Starter starts the order workflow of every PedidoCreado
	// (lambdas/iniciar-pedido): its window is Step Functions' 90-day
	// name retention less a day.
	Starter = Consumer{
		Function:          "mf-iniciar-pedido",
		IdempotencyKey:    "the execution name of the order (orderstart.ExecutionNameFor; Step Functions keeps it 90 days)",
		Window:            eventsapi.StarterWindow,
		CreatedAtKey:      eventsapi.KeyCreadoEn,
		SupportedVersions: eventsapi.AcceptedVersions(eventsapi.TypePedidoCreado),
		VersionKey:        "detail.version",
		RequiredKeys:      []string{"detail.pedido_id", eventsapi.KeyCreadoEn},
		Content: func(body string) error {
			_, _, err := DecodeCreated([]byte(body))
			return err
		},
	}
)

// All is every consumer.
var All = []Consumer{Preparation, Mail, ERPNotice, Stock, Starter}

// Find returns the consumer whose Function is function.
func Find(function string) (Consumer, bool) {
	for _, c := range All {
		if c.Function == function {
			return c, true
		}
	}
	return Consumer{}, false
}

// confirmed is the Content of a consumer of PedidoConfirmado that refuses
// what check refuses.
func confirmed(check func(p *eventsapi.PedidoConfirmado) error) func(body string) error {
	return func(body string) error {
		var p eventsapi.PedidoConfirmado
		return decode(body, &p, func() error { return check(&p) })
	}
}

// decode refuses a body that does not decode into v, or that check
// refuses once decoded.
func decode(body string, v any, check func() error) error {
	if err := json.Unmarshal([]byte(body), v); err != nil {
		return fmt.Errorf("body does not match the expected schema: %w", err)
	}
	if err := check(); err != nil {
		return fmt.Errorf("invalid message: %w", err)
	}
	return nil
}

// checkPreparation refuses an order the warehouse cannot prepare: one
// without lines, or a line without a SKU or a positive quantity.
func checkPreparation(p *eventsapi.PedidoConfirmado) error {
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

// checkERPNotice refuses a notice the ERP could not book.
func checkERPNotice(p *eventsapi.PedidoConfirmado) error {
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

// checkMail refuses an e-mail without an address or an amount.
func checkMail(p *eventsapi.PedidoConfirmado) error {
	var problems []error
	if at := strings.LastIndex(p.Cliente.Email, "@"); at < 1 || at == len(p.Cliente.Email)-1 || strings.ContainsAny(p.Cliente.Email, " \r\n<>\",") {
		problems = append(problems, fmt.Errorf("cliente.email %q is not an e-mail address", p.Cliente.Email))
	}
	if p.TotalCentimos <= 0 {
		problems = append(problems, fmt.Errorf("total_centimos %d is not positive", p.TotalCentimos))
	}
	if !eventsapi.IsCurrency(p.Moneda) {
		problems = append(problems, fmt.Errorf("moneda %q is not an ISO 4217 code", p.Moneda))
	}
	return errors.Join(problems...)
}

// EventBridgeEvent is the EventBridge event as the starter's buffer queue
// receives it.
type EventBridgeEvent struct {
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Detail     json.RawMessage `json:"detail"`
}

// DecodeCreated reads a buffered event as the starter does before it
// calls anything: an EventBridge event of detail-type PedidoCreado whose
// detail parses and validates. Its error says why the starter refuses the
// message (poison; the signature, checked next, needs the key).
func DecodeCreated(body []byte) (EventBridgeEvent, eventsapi.PedidoCreado, error) {
	var env EventBridgeEvent
	if err := json.Unmarshal(body, &env); err != nil {
		return env, eventsapi.PedidoCreado{}, fmt.Errorf("not an EventBridge event: %v", err)
	}
	if env.DetailType != eventsapi.TypePedidoCreado {
		return env, eventsapi.PedidoCreado{}, fmt.Errorf("detail-type %q, this starter handles %s only", env.DetailType, eventsapi.TypePedidoCreado)
	}
	pedido, err := eventsapi.Parse[eventsapi.PedidoCreado](env.Detail)
	return env, pedido, err
}
