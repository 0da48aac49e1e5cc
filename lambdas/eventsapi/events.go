// Package eventsapi is the contract of the order flow's messages:
// PedidoCreado and CarritoAbandonado on bus-mercadofresco, PedidoConfirmado
// on the fan-out topic mercadofresco-pedido-confirmado, and MovimientoStock
// on mercadofresco-movimientos-stock.fifo. It depends on the standard
// library only, so the CDK constructs and every consumer import the same
// names.
//
// Every message carries "version" (a major version); within a major
// changes are additive and optional (schemas/, checked by `mf schemas`),
// a consumer ignores unknown fields and dead-letters a version it does not
// accept (AcceptedVersions), and consumers deploy before producers. Parse
// wraps ErrUnsupportedVersion or ErrInvalid, so a consumer
// classifies the failure as poison (docs/design.md#sqs-batches).
package eventsapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Event sources and detail-types on bus-mercadofresco.
const (
	// SourceTienda is the source of the shop's events, published by the
	// outbox publisher (constructs/outbox).
	SourceTienda = "mercadofresco.tienda"
	// SourceCarritos is the source of the events the pipe pipe-mf-carritos
	// derives from the carts table's stream.
	SourceCarritos = "mercadofresco.carritos"

	// TypePedidoCreado is the detail-type of a new order (PedidoCreado).
	TypePedidoCreado = "PedidoCreado"
	// TypePedidoConfirmado names a confirmed order (PedidoConfirmado). It is
	// the value of the SNS message attribute AttrTipo on the fan-out topic.
	TypePedidoConfirmado = "PedidoConfirmado"
	// TypeCarritoAbandonado is the detail-type of a cart whose TTL expired.
	TypeCarritoAbandonado = "CarritoAbandonado"
)

// Version1 is the first major version of every message in this package
// (versions.go: what the producers write and the consumers accept).
const Version1 = 1

// SNS message attributes the workflow sets on every PedidoConfirmado it
// publishes (String values), so subscriptions can filter without parsing
// the body. The body is the PedidoConfirmado JSON (raw message delivery).
const (
	AttrTipo    = "tipo"
	AttrVersion = "version"
)

// Errors wrapped by the Parse functions and Validate methods.
var (
	// ErrUnsupportedVersion: the message's "version" is not one this code
	// understands. Poison for the consumer that meets it (dead-letter it
	// with the reason; do not retry).
	ErrUnsupportedVersion = errors.New("eventsapi: unsupported version")
	// ErrInvalid: the message is not valid JSON or misses a required field.
	ErrInvalid = errors.New("eventsapi: invalid message")
)

// Cliente is the customer of an order.
type Cliente struct {
	ID     string `json:"id"`
	Email  string `json:"email"`
	Nombre string `json:"nombre"`
}

// Linea is one order line. Amounts are integer cents.
type Linea struct {
	SKU            string `json:"sku"`
	Cantidad       int64  `json:"cantidad"`
	PrecioCentimos int64  `json:"precio_centimos"`
}

// PedidoCreado is the detail of a PedidoCreado event (source SourceTienda):
// the payload the shop writes into the outbox (lambdas/pedido-writer) plus
// the keys the outbox publisher adds (id_evento, agregado_id, creado_en).
// It is the input of the workflow mercadofresco-procesar-pedido.
type PedidoCreado struct {
	// IDEvento is the outbox row id (the same on every re-publication).
	IDEvento string `json:"id_evento,omitempty"`
	// AgregadoID is the pedido_id again (the outbox's aggregate id).
	AgregadoID string `json:"agregado_id,omitempty"`
	// CreadoEn is when the order was written (RFC 3339).
	CreadoEn string `json:"creado_en,omitempty"`

	Version  int    `json:"version"`
	PedidoID string `json:"pedido_id"`
	// ClienteID is the customer id (also in Cliente.ID).
	ClienteID string `json:"cliente_id"`
	// Cliente carries what the confirmation needs (e-mail, name).
	Cliente       Cliente `json:"cliente"`
	TotalCentimos int64   `json:"total_centimos"`
	// Moneda is the ISO 4217 code ("EUR").
	Moneda string  `json:"moneda"`
	Lineas []Linea `json:"lineas"`
	// TokenTarjeta is the card token the shop obtained from the payment
	// gateway (never card data); the charge task sends it.
	TokenTarjeta string `json:"token_tarjeta"`
	// Intento is the payment attempt: absent (or 1) for the order itself,
	// 2 and more when the customer retried the payment after the workflow
	// failed for an unavailable gateway (lambdas/shop). The starter
	// gives each attempt its own execution name.
	Intento int `json:"intento,omitempty"`
	// Firma is the charge signature the outbox publisher adds
	// (lambdas/signing: "v1.<key id>.<mac>" over id_evento, pedido_id,
	// total_centimos, moneda and token_tarjeta). Optional in the schema,
	// required by the starter and cobro, which refuse an order without a
	// valid one (docs/design.md#charge-signature).
	Firma string `json:"firma,omitempty"`
}

// Validate reports every missing or invalid field of a version-1 order:
// what the workflow needs to charge, reserve and confirm it.
func (p PedidoCreado) Validate() error {
	if err := checkVersion(TypePedidoCreado, p.Version); err != nil {
		return err
	}
	var ps problems
	ps.check(p.PedidoID == "", "pedido_id is empty")
	ps.check(p.ClienteID == "", "cliente_id is empty")
	ps.check(p.Cliente.ID == "" || p.Cliente.Email == "", "cliente.id and cliente.email are required (the confirmation needs them)")
	ps.check(p.TokenTarjeta == "", "token_tarjeta is empty")
	ps.checkLines(p.Lineas)
	ps.check(p.TotalCentimos <= 0, "total_centimos %d is not positive", p.TotalCentimos)
	ps.check(!IsCurrency(p.Moneda), "moneda %q is not an ISO 4217 code", p.Moneda)
	return ps.err("PedidoCreado")
}

// PedidoConfirmado is the message the workflow publishes to the fan-out
// topic mercadofresco-pedido-confirmado once the order is charged and its
// stock reserved. Order preparation, the confirmation e-mail and the ERP
// notice read it. Consumers derive their idempotency keys from PedidoID
// (preparacion:<pedido_id>, correo-confirmacion:<pedido_id>, ...).
type PedidoConfirmado struct {
	Version  int     `json:"version"`
	PedidoID string  `json:"pedido_id"`
	Cliente  Cliente `json:"cliente"`
	Lineas   []Linea `json:"lineas"`
	// TotalCentimos is the amount charged, in integer cents of Moneda.
	TotalCentimos int64  `json:"total_centimos"`
	Moneda        string `json:"moneda"`
	// ReferenciaCobro is the gateway's charge id (cobro task output).
	ReferenciaCobro string `json:"referencia_cobro"`
	// ConfirmadoEn is when the workflow confirmed the order (RFC 3339,
	// the confirm state's entered time).
	ConfirmadoEn string `json:"confirmado_en"`
	// Ejecucion is the ARN of the workflow execution (for tracing).
	Ejecucion string `json:"ejecucion"`
	// CreadoEn is when the order was committed in Aurora (the PedidoCreado's
	// creado_en, RFC 3339): with ConfirmadoEn it measures the
	// commit-to-confirmation objective (docs/design.md#slo).
	CreadoEn string `json:"creado_en,omitempty"`
}

// Validate reports every missing or invalid field of a version-1 message.
func (p PedidoConfirmado) Validate() error {
	if err := checkVersion(TypePedidoConfirmado, p.Version); err != nil {
		return err
	}
	var ps problems
	ps.check(p.PedidoID == "", "pedido_id is empty")
	ps.check(p.Cliente.ID == "", "cliente.id is empty")
	ps.checkLines(p.Lineas)
	ps.check(p.TotalCentimos <= 0, "total_centimos %d is not positive", p.TotalCentimos)
	ps.check(!IsCurrency(p.Moneda), "moneda %q is not an ISO 4217 code", p.Moneda)
	ps.check(p.ReferenciaCobro == "", "referencia_cobro is empty")
	return ps.err("PedidoConfirmado")
}

// TipoMovimiento is the kind of a stock movement.
type TipoMovimiento string

// Kinds of stock movement.
const (
	// Reserva takes Cantidad units of SKU for an order.
	Reserva TipoMovimiento = "reserva"
	// Liberacion gives back the units an order reserved (compensation of a
	// Reserva when the order fails after reserving).
	Liberacion TipoMovimiento = "liberacion"
	// Ajuste changes the stock of SKU by Cantidad units (signed; an
	// inventory correction, not tied to an order).
	Ajuste TipoMovimiento = "ajuste"
)

// Secuencia values of the movements of one order and SKU: a Liberacion
// always follows its Reserva. A consumer that records, per (pedido_id,
// sku), the highest Secuencia applied with a conditional write
// (secuencia > current) makes the arrival order irrelevant: a Liberacion
// that arrives first (after a DLQ redrive, say) is recorded and the late
// Reserva is then skipped instead of taking stock that nobody will release.
//
// The workflow's compensation releases EVERY line of a failed order,
// reserved or not (a reservation that failed half-way cannot say which
// of its sends happened). So a Liberacion gives stock back only where its Reserva was
// applied; one with no applied Reserva changes no stock (it is still
// recorded, so that Reserva is skipped if it comes later).
const (
	SecuenciaReserva    = 1
	SecuenciaLiberacion = 2
)

// MovimientoStock is a message on the FIFO queue
// mercadofresco-movimientos-stock.fifo. Producers send it with
// MessageGroupId = SKU (order kept per SKU, ~3,400-way parallelism) and
// MessageDeduplicationId = DeduplicationID() (the idempotency key, which the
// consumer also uses).
type MovimientoStock struct {
	Version int            `json:"version"`
	Tipo    TipoMovimiento `json:"tipo"`
	// PedidoID is the order of a Reserva or Liberacion (empty for Ajuste).
	PedidoID string `json:"pedido_id,omitempty"`
	SKU      string `json:"sku"`
	// Cantidad is the number of units: positive for Reserva and
	// Liberacion, signed and non-zero for Ajuste.
	Cantidad int64 `json:"cantidad"`
	// Secuencia orders the movements of one (pedido_id, sku):
	// SecuenciaReserva, SecuenciaLiberacion. For Ajuste, a number that
	// grows with each adjustment of the SKU (e.g. epoch milliseconds).
	Secuencia int64 `json:"secuencia"`
	// EmitidoEn is when the movement was produced (RFC 3339): for the
	// workflow's, when the starter built the order's movements.
	EmitidoEn string `json:"emitido_en"`
	// Referencia identifies an Ajuste (its document id); empty otherwise.
	Referencia string `json:"referencia,omitempty"`
}

// DeduplicationID is the movement's idempotency key (the stock consumer's)
// and FIFO MessageDeduplicationId: "reserva:<pedido_id>:<sku>",
// "liberacion:<pedido_id>:<sku>" or "ajuste:<referencia>:<sku>".
func (m MovimientoStock) DeduplicationID() string {
	owner := m.PedidoID
	if m.Tipo == Ajuste {
		owner = m.Referencia
	}
	return string(m.Tipo) + ":" + owner + ":" + m.SKU
}

// GroupID is the FIFO MessageGroupId of the movement: its SKU.
func (m MovimientoStock) GroupID() string { return m.SKU }

// Validate reports every missing or invalid field of a version-1 movement.
func (m MovimientoStock) Validate() error {
	if err := checkVersion(TypeMovimientoStock, m.Version); err != nil {
		return err
	}
	var ps problems
	ps.check(m.SKU == "", "sku is empty")
	switch m.Tipo {
	case Reserva, Liberacion:
		ps.check(m.PedidoID == "", "pedido_id is empty")
		ps.check(m.Cantidad <= 0, "cantidad %d is not positive", m.Cantidad)
	case Ajuste:
		ps.check(m.Referencia == "", "referencia is empty")
		ps.check(m.Cantidad == 0, "cantidad is zero")
	default:
		ps.check(true, "tipo %q is not reserva, liberacion or ajuste", m.Tipo)
	}
	ps.check(m.Secuencia <= 0, "secuencia %d is not positive", m.Secuencia)
	for _, c := range []struct{ name, v string }{{"pedido_id", m.PedidoID}, {"referencia", m.Referencia}, {"sku", m.SKU}} {
		// The fields joined by ':' into DeduplicationID: one that held ':' or
		// blanks at its ends would make two movements' ids collide or differ.
		ps.check(strings.Contains(c.v, ":"), "%s %q contains ':'", c.name, c.v)
		ps.check(strings.TrimSpace(c.v) != c.v, "%s %q has leading or trailing blanks", c.name, c.v)
	}
	ps.check(len(m.DeduplicationID()) > MaxDeduplicationIDLength, "deduplication id longer than %d characters", MaxDeduplicationIDLength)
	return ps.err("MovimientoStock")
}

// MaxDeduplicationIDLength is the SQS limit of MessageDeduplicationId.
const MaxDeduplicationIDLength = 128

// CarritoAbandonado is the detail of a CarritoAbandonado event (source
// SourceCarritos): a cart of mercadofresco-carritos that DynamoDB deleted
// because its TTL (expira_en) passed. The pipe pipe-mf-carritos builds it
// from the stream record's old image.
type CarritoAbandonado struct {
	Version int `json:"version"`
	// IDEvento is the stream record's eventID: the same on every delivery
	// of that record, so consumers de-duplicate on it.
	IDEvento  string `json:"id_evento"`
	CarritoID string `json:"carrito_id"`
	ClienteID string `json:"cliente_id"`
	// ActualizadoEn is the cart's last change (RFC 3339), from the item.
	ActualizadoEn string `json:"actualizado_en"`
}

// Attributes of the carts table mercadofresco-carritos that the pipe reads.
const (
	CarritosKeyAttribute     = "carrito_id"
	CarritosTTLAttribute     = "expira_en"
	CarritosClienteAttribute = "cliente_id"
	CarritosUpdatedAttribute = "actualizado_en"
)

// Validate reports every missing field of a version-1 event.
func (c CarritoAbandonado) Validate() error {
	if err := checkVersion(TypeCarritoAbandonado, c.Version); err != nil {
		return err
	}
	var ps problems
	ps.check(c.IDEvento == "", "id_evento is empty")
	ps.check(c.CarritoID == "", "carrito_id is empty")
	return ps.err("CarritoAbandonado")
}

// Parse decodes a message's body (an event's detail) into a T and
// validates it: eventsapi.Parse[eventsapi.PedidoCreado](detail).
func Parse[T interface{ Validate() error }](body []byte) (T, error) {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return v, fmt.Errorf("%w: %s: %v", ErrInvalid, strings.TrimPrefix(fmt.Sprintf("%T", v), "eventsapi."), err)
	}
	return v, v.Validate()
}

func (p *problems) checkLines(lines []Linea) {
	p.check(len(lines) == 0, "lineas is empty")
	for i, l := range lines {
		p.check(l.SKU == "", "lineas[%d].sku is empty", i)
		p.check(l.Cantidad <= 0, "lineas[%d].cantidad %d is not positive", i, l.Cantidad)
		p.check(l.PrecioCentimos < 0, "lineas[%d].precio_centimos %d is negative", i, l.PrecioCentimos)
	}
}

// IsCurrency reports whether s has the form of an ISO 4217 code: three
// upper-case ASCII letters ("EUR").
func IsCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// problems collects every reason a message is invalid.
type problems []string

// check records the problem when bad.
func (p *problems) check(bad bool, format string, args ...any) {
	if bad {
		*p = append(*p, fmt.Sprintf(format, args...))
	}
}

// err is nil without problems, else ErrInvalid naming what and each problem.
func (p problems) err(what string) error {
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalid, what, strings.Join(p, "; "))
}

// Keys the starter adds to the workflow's input (WorkflowInput): the
// order's stock movements as SQS batch entries.
const (
	InputReservas     = "reservas"
	InputLiberaciones = "liberaciones"
)

// MaxBatchEntries is SQS's limit of entries in one SendMessageBatch.
const MaxBatchEntries = 10

// BatchEntry is one message of a SendMessageBatch, with the API's field
// names (Step Functions' aws-sdk integration passes them through).
type BatchEntry struct {
	ID              string `json:"Id"`
	Body            string `json:"MessageBody"`
	GroupID         string `json:"MessageGroupId"`
	DeduplicationID string `json:"MessageDeduplicationId"`
}

// WorkflowInput is the input of the workflow mercadofresco-procesar-pedido
// for the PedidoCreado detail (p, decoded): the detail's fields as
// published, plus under InputReservas and InputLiberaciones one
// MovimientoStock per line of the order, emitted at, in batches of at most
// MaxBatchEntries (entry Id: the line's index). JSONPath cannot turn lines
// into entries, hence the starter (docs/design.md#stock-batches).
func WorkflowInput(detail []byte, p PedidoCreado, at time.Time) ([]byte, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(detail, &in); err != nil {
		return nil, fmt.Errorf("%w: PedidoCreado: %v", ErrInvalid, err)
	}
	for key, m := range map[string]MovimientoStock{
		InputReservas:     {Tipo: Reserva, Secuencia: SecuenciaReserva},
		InputLiberaciones: {Tipo: Liberacion, Secuencia: SecuenciaLiberacion},
	} {
		batches := make([][]BatchEntry, 0, (len(p.Lineas)+MaxBatchEntries-1)/MaxBatchEntries)
		for i, l := range p.Lineas {
			m.Version, m.PedidoID, m.SKU, m.Cantidad, m.EmitidoEn = MovimientoStockVersion, p.PedidoID, l.SKU, l.Cantidad, at.UTC().Format(time.RFC3339Nano)
			body, _ := json.Marshal(m) // strings and integers only: cannot fail
			if i%MaxBatchEntries == 0 {
				batches = append(batches, nil)
			}
			batches[len(batches)-1] = append(batches[len(batches)-1], BatchEntry{ID: strconv.Itoa(i), Body: string(body), GroupID: m.GroupID(), DeduplicationID: m.DeduplicationID()})
		}
		in[key], _ = json.Marshal(batches) // strings only: cannot fail
	}
	return json.Marshal(in)
}
