package lambdatest

// Gateway: a fake payment gateway for tests, on
// localaws.Service: it speaks the API lambdas/payment's client
// uses (POST /v1/cobros, POST /v1/reembolsos), requires the API key,
// declines the card token DeclinedToken with 402, honours Idempotency-Key,
// and keeps a ledger of charges and refunds so a test can assert that an
// order was charged exactly once. Faults are injected through Server.

import (
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/payment"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// DeclinedToken is the card token the fake always declines.
const DeclinedToken = "tok_rechazada"

// Gateway is the fake. Embedded *localaws.Service gives Inject, Requests,
// Effects, URL and Close.
type Gateway struct {
	*localaws.Service

	mu      sync.Mutex
	apiKey  string
	charges []payment.Charge
	refunds []payment.Refund
}

// NewGateway starts a gateway accepting apiKey. Options are passed to localaws.NewService.
func NewGateway(apiKey string, opts ...localaws.ServiceOption) *Gateway {
	g := &Gateway{apiKey: apiKey}
	opts = append([]localaws.ServiceOption{localaws.WithPrecheck(g.authorize)}, opts...)
	g.Service = localaws.NewService(g.handle, opts...)
	return g
}

// SetAPIKey rotates the accepted key (the client must refresh on 401).
func (g *Gateway) SetAPIKey(k string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.apiKey = k
}

// Charges returns the charges made, in order.
func (g *Gateway) Charges() []payment.Charge {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]payment.Charge(nil), g.charges...)
}

// ChargesFor counts the charges made for an order.
func (g *Gateway) ChargesFor(pedidoID string) int {
	n := 0
	for _, c := range g.Charges() {
		if c.PedidoID == pedidoID {
			n++
		}
	}
	return n
}

// Refunds returns the refunds made, in order.
func (g *Gateway) Refunds() []payment.Refund {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]payment.Refund(nil), g.refunds...)
}

func (g *Gateway) authorize(r localaws.ServiceRequest) *localaws.ServiceResponse {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+g.apiKey {
		resp := localaws.JSON(http.StatusUnauthorized, `{"codigo":"no_autorizado","mensaje":"invalid API key"}`)
		return &resp
	}
	if r.Method != http.MethodPost || (r.Path != payment.PathCobros && r.Path != payment.PathReembolsos) {
		resp := localaws.JSON(http.StatusNotFound, `{"codigo":"ruta_desconocida"}`)
		return &resp
	}
	return nil
}

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

func fail(status int, code, msg string) localaws.ServiceResponse {
	b, _ := json.Marshal(payment.APIError{Codigo: code, Mensaje: msg})
	return localaws.JSON(status, string(b))
}

func ok(v any) localaws.ServiceResponse {
	b, _ := json.Marshal(v)
	return localaws.JSON(http.StatusCreated, string(b))
}

// handle applies the effect (runs once per Idempotency-Key).
func (g *Gateway) handle(r localaws.ServiceRequest) localaws.ServiceResponse {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch r.Path {
	case payment.PathCobros:
		var in payment.ChargeRequest
		if err := json.Unmarshal(r.Body, &in); err != nil || in.PedidoID == "" || in.ImporteCentimos <= 0 || !currency.MatchString(in.Moneda) || in.TokenTarjeta == "" {
			return fail(http.StatusBadRequest, "solicitud_invalida", fmt.Sprintf("invalid charge %s", r.Body))
		}
		if in.TokenTarjeta == DeclinedToken || strings.HasPrefix(in.TokenTarjeta, DeclinedToken+"_") {
			return fail(http.StatusPaymentRequired, payment.CodeTarjetaRechazada, "card declined by the issuer")
		}
		c := payment.Charge{ID: fmt.Sprintf("cob_%06d", len(g.charges)+1), PedidoID: in.PedidoID,
			ImporteCentimos: in.ImporteCentimos, Moneda: in.Moneda, Estado: "capturado"}
		g.charges = append(g.charges, c)
		return ok(c)
	default:
		var in payment.RefundRequest
		if err := json.Unmarshal(r.Body, &in); err != nil || in.ReferenciaCobro == "" || in.ImporteCentimos <= 0 {
			return fail(http.StatusBadRequest, "solicitud_invalida", fmt.Sprintf("invalid refund %s", r.Body))
		}
		var charge *payment.Charge
		for i := range g.charges {
			if g.charges[i].ID == in.ReferenciaCobro {
				charge = &g.charges[i]
			}
		}
		if charge == nil {
			return fail(http.StatusNotFound, "cobro_desconocido", "no charge "+in.ReferenciaCobro)
		}
		refunded := int64(0)
		for _, rf := range g.refunds {
			if rf.ReferenciaCobro == charge.ID {
				refunded += rf.ImporteCentimos
			}
		}
		if in.Moneda != charge.Moneda || refunded+in.ImporteCentimos > charge.ImporteCentimos {
			return fail(http.StatusUnprocessableEntity, "importe_excesivo", "refund exceeds the charge")
		}
		rf := payment.Refund{ID: fmt.Sprintf("ree_%06d", len(g.refunds)+1), ReferenciaCobro: charge.ID,
			ImporteCentimos: in.ImporteCentimos, Moneda: in.Moneda, Estado: "reembolsado"}
		g.refunds = append(g.refunds, rf)
		return ok(rf)
	}
}
