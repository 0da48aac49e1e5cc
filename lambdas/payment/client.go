package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mercadofresco/integration/lambdas/apikey"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/internal/text"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/payment/paymentapi"
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

// Sentinel errors of the client (match with errors.Is). A refused call
// because the circuit is open matches breaker.ErrOpen instead.
var (
	// ErrCardDeclined: HTTP 402, the card was declined.
	ErrCardDeclined = errors.New("payment: card declined")
	// ErrRejected: the gateway refused the request as invalid (4xx other
	// than 401, 402, 409 and 429). Retrying the same request cannot succeed.
	ErrRejected = errors.New("payment: request rejected by the gateway")
	// ErrUnavailable: the gateway did not give an answer after the
	// attempts allowed (5xx, 429, timeouts, connection failures, the retry
	// budget, an API key refused even after refreshing it).
	ErrUnavailable = errors.New("payment: gateway unavailable")
)

// CallCounter caps an operation's calls (CallBudget in production).
type CallCounter interface {
	// Take spends one call of the operation key, or fails (ErrCallsExhausted
	// when none is left): then the call is not made.
	Take(ctx context.Context, key string) error
	// Refund gives back a call that was not made.
	Refund(ctx context.Context, key string)
}

// GatewayError is a failed gateway operation. Kind is one of the sentinels
// above; errors.Is(err, Kind) is true, and the cause (a *retry.StatusError,
// a transport error, a *retry.GiveUpError) stays reachable with errors.As.
type GatewayError struct {
	Kind   error
	Op     string // "cobro" or "reembolso"
	Status int    // HTTP status of the last answer, 0 if none
	Code   string // the gateway's codigo, if it sent one
	Err    error
}

func (e *GatewayError) Error() string {
	msg := fmt.Sprintf("%s: %v", e.Op, e.Kind)
	if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	if e.Err != nil {
		inner := e.Err.Error()
		if strings.HasPrefix(inner, msg) {
			return inner // the give-up of an operation wraps its last attempt's error
		}
		msg += ": " + inner
	}
	return msg
}

// Unwrap returns the cause.
func (e *GatewayError) Unwrap() error { return e.Err }

// Is matches Kind.
func (e *GatewayError) Is(target error) bool { return target == e.Kind }

// KeySource provides the gateway API key (lambdas/apikey).
type KeySource = apikey.Source

// DefaultReadTimeout is the per-attempt read timeout (SPEC: 30 s, well under
// the 400 s visibility timeout of the lesson's fix).
const DefaultReadTimeout = 30 * time.Second

// Config configures a Client. BaseURL, Keys and Retrier are required.
type Config struct {
	// BaseURL of the gateway ("https://pasarela.example"); paths are
	// appended to it.
	BaseURL string
	// Keys supplies the API key (SecretKey in production).
	Keys KeySource
	// Retrier runs the attempts of each operation (its budget is the
	// gateway's). Charges and refunds are sent as idempotent: they always
	// carry an Idempotency-Key.
	Retrier *retry.Retrier
	// Breaker, when set, guards every attempt; an open circuit stops the
	// operation at once.
	Breaker *breaker.Breaker
	// Calls, when set, caps the calls of each operation (by its
	// Idempotency-Key) across invocations (CallBudget): a unit is taken
	// before each call and given back when the breaker refuses it.
	Calls CallCounter
	// ReadTimeout bounds each attempt (default 30 s).
	ReadTimeout time.Duration
	// HTTPClient defaults to one with dial and TLS handshake timeouts and no
	// overall timeout (ReadTimeout applies per attempt).
	HTTPClient *http.Client
	// Metrics receives PasarelaLatencia and PasarelaErrores per attempt and
	// the retry budget's figures per operation (default: discarded).
	Metrics metrics.Emitter
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Client calls the payment gateway. Safe for concurrent use.
type Client struct {
	cfg  Config
	base *url.URL
	log  *slog.Logger
}

// NewClient validates cfg and returns a client.
func NewClient(cfg Config) (*Client, error) {
	var problems []string
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		problems = append(problems, fmt.Sprintf("BaseURL %q is not an absolute http(s) URL", cfg.BaseURL))
	}
	if cfg.Keys == nil {
		problems = append(problems, "Keys is required")
	}
	if cfg.Retrier == nil {
		problems = append(problems, "Retrier is required")
	}
	if cfg.ReadTimeout < 0 {
		problems = append(problems, "ReadTimeout is negative")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("payment: invalid Config: %s", strings.Join(problems, "; "))
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout: 5 * time.Second,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
		}}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	return &Client{cfg: cfg, base: base, log: cfg.Logger}, nil
}

// Charge charges the card once per key: the key travels as the
// Idempotency-Key header (cobro:<pedido_id>, see KeyCobro), so a retry
// after a lost answer gets the first charge back instead of a second one.
func (c *Client) Charge(ctx context.Context, key string, req ChargeRequest) (Charge, error) {
	var out Charge
	err := c.do(ctx, "cobro", PathCobros, key, req, &out)
	return out, err
}

// Refund refunds a charge once per key (reembolso:<pedido_id>, see KeyReembolso).
func (c *Client) Refund(ctx context.Context, key string, req RefundRequest) (Refund, error) {
	var out Refund
	err := c.do(ctx, "reembolso", PathReembolsos, key, req, &out)
	return out, err
}

func (c *Client) do(ctx context.Context, op, path, key string, in, out any) error {
	if key == "" {
		return &GatewayError{Kind: ErrRejected, Op: op, Err: errors.New("empty idempotency key")}
	}
	body, err := json.Marshal(in)
	if err != nil {
		return &GatewayError{Kind: ErrRejected, Op: op, Err: err}
	}
	var last *GatewayError
	err = c.cfg.Retrier.Do(ctx, retry.Idempotent, func(ctx context.Context, attempt int) error {
		gerr := c.attempt(ctx, op, path, key, body, out)
		if gerr == nil {
			return nil
		}
		last = gerr
		c.log.LogAttrs(ctx, slog.LevelWarn, "gateway attempt failed", slog.String("op", op),
			slog.String("idempotency_key", key), slog.Int("attempt", attempt), slog.String("error", gerr.Error()))
		return gerr
	})
	c.reportBudget(err)
	if err == nil {
		return nil
	}
	var g *retry.GiveUpError
	if !errors.As(err, &g) || last == nil {
		return &GatewayError{Kind: ErrUnavailable, Op: op, Err: err}
	}
	if errors.Is(last, ErrUnavailable) {
		// Keep the reason the retries stopped (budget, exhausted, deadline).
		return &GatewayError{Kind: ErrUnavailable, Op: op, Status: last.Status, Code: last.Code, Err: err}
	}
	return last
}

// attempt sends one request through the breaker. Errors are classified for
// the Retrier: a refused call (open circuit) and business answers are
// permanent, 409 (key in use) is retryable, 5xx/429/transport errors keep
// the classes retry.Classify gives them.
func (c *Client) attempt(ctx context.Context, op, path, key string, body []byte, out any) *GatewayError {
	apiKey, err := c.cfg.Keys.APIKey(ctx)
	if err != nil {
		// Before the breaker: Secrets Manager failing says nothing about the gateway.
		return &GatewayError{Kind: ErrUnavailable, Op: op, Err: fmt.Errorf("API key: %w", err)}
	}
	if c.cfg.Calls != nil {
		if err := c.cfg.Calls.Take(ctx, key); err != nil {
			kind := ErrUnavailable
			if errors.Is(err, ErrCallsExhausted) {
				kind = ErrCallsExhausted
			}
			return &GatewayError{Kind: kind, Op: op, Err: retry.Permanent(err)}
		}
	}
	var call *breaker.Call
	if c.cfg.Breaker != nil {
		call, err = c.cfg.Breaker.Allow(ctx)
		if err != nil {
			if c.cfg.Calls != nil {
				c.cfg.Calls.Refund(context.WithoutCancel(ctx), key) // nothing was sent
			}
			return &GatewayError{Kind: ErrUnavailable, Op: op, Err: retry.Permanent(err)}
		}
	}
	status, respBody, header, err := c.send(ctx, path, key, apiKey, body)
	if err == nil && status == http.StatusUnauthorized {
		// The key may have been rotated: refresh it once and resend.
		if fresh, kerr := c.cfg.Keys.Refresh(ctx); kerr == nil {
			status, respBody, header, err = c.send(ctx, path, key, fresh, body)
		} else {
			c.log.LogAttrs(ctx, slog.LevelError, "gateway refused the API key and it cannot be refreshed", slog.String("error", kerr.Error()))
		}
	}
	gerr := c.interpret(op, status, respBody, header, err, out)
	if call != nil {
		// The breaker counts the gateway failing (no answer, 5xx, 429), not
		// its business answers.
		var outcome error
		if err != nil || status >= 500 || status == http.StatusTooManyRequests {
			outcome = gerr
		}
		call.Done(ctx, outcome)
	}
	return gerr
}

func (c *Client) send(ctx context.Context, path, key, apiKey string, body []byte) (int, []byte, http.Header, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.ReadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.base.String()+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, retry.Permanent(err)
	}
	// net/http replays, once, a request carrying Idempotency-Key that fails
	// on a reused connection. Every attempt must be one the retry policy
	// counts (the attempts guardrail multiplies GATEWAY_MAX_ATTEMPTS), so
	// the body is made non-replayable for the transport.
	req.GetBody = nil
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Idempotency-Key", key)
	start := time.Now()
	resp, err := c.cfg.HTTPClient.Do(req)
	var respBody []byte
	if err == nil {
		respBody, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
	elapsed := time.Since(start)
	ms := []metrics.Metric{{Name: paymentapi.MetricGatewayLatency, Unit: metrics.UnitMilliseconds, Value: float64(elapsed.Microseconds()) / 1000}}
	if err != nil || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		ms = append(ms, metrics.Metric{Name: paymentapi.MetricGatewayErrors, Unit: metrics.UnitCount, Value: 1})
	}
	_ = c.cfg.Metrics.Write(ms...)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			err = fmt.Errorf("no answer within the read timeout %s: %w", c.cfg.ReadTimeout, err)
		}
		return 0, nil, nil, err
	}
	return resp.StatusCode, respBody, resp.Header, nil
}

func (c *Client) interpret(op string, status int, body []byte, header http.Header, err error, out any) *GatewayError {
	if err != nil {
		return &GatewayError{Kind: ErrUnavailable, Op: op, Err: err}
	}
	if status >= 200 && status < 300 {
		if derr := json.Unmarshal(body, out); derr != nil {
			// The effect happened but the answer is unreadable: ambiguous,
			// and a retry with the same key returns the stored answer.
			return &GatewayError{Kind: ErrUnavailable, Op: op, Status: status, Err: retry.Ambiguous(fmt.Errorf("undecodable answer: %w", derr))}
		}
		return nil
	}
	var apiErr APIError
	_ = json.Unmarshal(body, &apiErr)
	se := &retry.StatusError{StatusCode: status, Body: text.Truncate(string(body), 256)}
	if ra, ok := retry.ParseRetryAfter(header.Get("Retry-After"), time.Now()); ok {
		se.RetryAfter = ra
	}
	g := &GatewayError{Op: op, Status: status, Code: apiErr.Codigo, Err: se}
	switch {
	case status == http.StatusPaymentRequired:
		g.Kind, g.Err = ErrCardDeclined, retry.Permanent(se)
	case status == http.StatusConflict:
		// Another request with this key is still running at the gateway.
		g.Kind, g.Err = ErrUnavailable, retry.Retryable(se)
	case status == http.StatusUnauthorized:
		g.Kind, g.Err = ErrUnavailable, retry.Permanent(fmt.Errorf("API key refused after a refresh: %w", se))
	case status == http.StatusTooManyRequests || status >= 500:
		g.Kind = ErrUnavailable
	default:
		g.Kind, g.Err = ErrRejected, retry.Permanent(se)
	}
	return g
}

func (c *Client) reportBudget(err error) {
	b := c.cfg.Retrier.Budget()
	if b == nil {
		return
	}
	ms := []metrics.Metric{{Name: paymentapi.MetricRetryRatio, Unit: "None", Value: b.State().Ratio}}
	if errors.Is(err, retry.ErrBudgetExhausted) {
		ms = append(ms, metrics.Metric{Name: paymentapi.MetricRetryBudgetDenied, Unit: metrics.UnitCount, Value: 1})
	}
	_ = c.cfg.Metrics.Write(ms...)
}
