package payment

import (
	"cmp"
	"context"
	"errors"
	"net/http"

	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Gateway paths.
const (
	PathCobros     = "/v1/cobros"
	PathReembolsos = "/v1/reembolsos"
)

// CodeTarjetaRechazada is the gateway's error code of a declined card (HTTP 402).
const CodeTarjetaRechazada = "tarjeta_rechazada"

// ChargeRequest is the body of POST /v1/cobros.
type ChargeRequest struct {
	PedidoID        string `json:"pedido_id"`
	ImporteCentimos int64  `json:"importe_centimos"`
	Moneda          string `json:"moneda"`
	TokenTarjeta    string `json:"token_tarjeta"`
}

// Charge is the gateway's answer to a charge.
type Charge struct {
	ID              string `json:"id"`
	PedidoID        string `json:"pedido_id"`
	ImporteCentimos int64  `json:"importe_centimos"`
	Moneda          string `json:"moneda"`
	Estado          string `json:"estado"`
}

// RefundRequest is the body of POST /v1/reembolsos.
type RefundRequest struct {
	PedidoID        string `json:"pedido_id"`
	ReferenciaCobro string `json:"referencia_cobro"`
	ImporteCentimos int64  `json:"importe_centimos"`
	Moneda          string `json:"moneda"`
}

// Refund is the gateway's answer to a refund.
type Refund struct {
	ID              string `json:"id"`
	ReferenciaCobro string `json:"referencia_cobro"`
	ImporteCentimos int64  `json:"importe_centimos"`
	Moneda          string `json:"moneda"`
	Estado          string `json:"estado"`
}

// APIError is the gateway's error body.
type APIError struct {
	Codigo  string `json:"codigo"`
	Mensaje string `json:"mensaje"`
}

// The gateway's kinds of failure: the Kind of the *httpdep.Error a Client
// returns (match with errors.Is). A call the open circuit refused also
// matches breaker.ErrOpen, one the call budget refused ErrCallsExhausted.
var (
	// ErrCardDeclined: HTTP 402, the card was declined.
	ErrCardDeclined = errors.New("payment: card declined")
	// ErrRejected: httpdep.ErrRejected from the gateway (a 4xx other than
	// 401, 402, 409 and 429): retrying the same request cannot succeed.
	ErrRejected = errors.New("payment: request rejected by the gateway")
	// ErrUnavailable: httpdep.ErrUnavailable from the gateway.
	ErrUnavailable = errors.New("payment: gateway unavailable")
)

// Client is the gateway's adapter over lambdas/httpdep: its operations,
// its kinds of failure and the retry budget's metrics per operation. Safe
// for concurrent use.
type Client struct {
	dep     *httpdep.Client
	metrics metrics.Emitter
}

// NewClient returns the gateway client cfg describes (httpdep.New), named
// lambdaapi.GatewayDependency with the gateway's metric names unless cfg
// names others. cfg.Calls is the per-operation cap (CallBudget).
func NewClient(cfg httpdep.Config) (*Client, error) {
	cfg.Name = cmp.Or(cfg.Name, lambdaapi.GatewayDependency)
	cfg.LatencyMetric = cmp.Or(cfg.LatencyMetric, lambdaapi.MetricGatewayLatency)
	cfg.ErrorsMetric = cmp.Or(cfg.ErrorsMetric, lambdaapi.MetricGatewayErrors)
	dep, err := httpdep.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{dep: dep, metrics: cmp.Or(cfg.Metrics, metrics.Discard)}, nil
}

// Charge charges the card once per key: the key travels as the
// Idempotency-Key header (cobro:<pedido_id>, see KeyCobro), so a retry
// after a lost answer gets the first charge back instead of a second one.
func (c *Client) Charge(ctx context.Context, key string, req ChargeRequest) (Charge, error) {
	var out Charge
	err := c.post(ctx, PathCobros, key, req, &out)
	return out, err
}

// Refund refunds a charge once per key (reembolso:<pedido_id>, see idempotency.KeyReembolso).
func (c *Client) Refund(ctx context.Context, key string, req RefundRequest) (Refund, error) {
	var out Refund
	err := c.post(ctx, PathReembolsos, key, req, &out)
	return out, err
}

func (c *Client) post(ctx context.Context, path, key string, in, out any) error {
	err := c.dep.Post(ctx, path, key, in, out)
	if errors.Is(err, retry.ErrBudgetExhausted) {
		_ = c.metrics.Write(metrics.Metric{Name: lambdaapi.MetricRetryBudgetDenied, Unit: metrics.UnitCount, Value: 1})
	}
	var e *httpdep.Error
	if errors.As(err, &e) {
		switch {
		case e.Kind == httpdep.ErrRejected && e.Status == http.StatusPaymentRequired:
			e.Kind = ErrCardDeclined
		case e.Kind == httpdep.ErrRejected:
			e.Kind = ErrRejected
		default:
			e.Kind = ErrUnavailable
		}
	}
	return err
}
