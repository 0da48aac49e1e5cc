// Package httpdep is the one client of the project's HTTP dependencies (the
// payment gateway through lambdas/payment, the warehouse, the ERP, the
// secondary e-mail provider): JSON POSTs with Authorization: Bearer <API
// key> (SecretKey: from Secrets Manager, cached, read again after a 401) and Idempotency-Key: <domain key>, every call
// through lambdas/retry and every attempt through the dependency's shared
// circuit breaker (lambdas/breaker).
//
// Answers: 2xx success (decoded into the caller's value); 409, 429, 5xx and
// no answer retried (within the breaker's fleet-wide retry budget), then
// ErrUnavailable; 401 reads the key again and sends
// once more, a second 401 is ErrUnavailable; any other 4xx ErrRejected,
// never retried. An open circuit stops the call at once (ErrUnavailable and
// breaker.ErrOpen). The breaker counts only no answer, 5xx and 429 as the
// dependency failing. The dependency must apply a key once and answer a
// repeat with the first answer. Reasoning: docs/design.md#http-dependencies.
package httpdep

import (
	"bytes"
	"cmp"
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

	"github.com/mercadofresco/integration/lambdas/failure"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// maxAnswer bounds the answer body read from a dependency.
const maxAnswer = 1 << 20

// Kinds of failure (match with errors.Is).
var (
	// ErrRejected: the dependency refused the request (a 4xx other than
	// 401, 409 and 429): the same request cannot succeed.
	ErrRejected = errors.New("httpdep: request rejected")
	// ErrUnavailable: no success after the attempts allowed (no answer,
	// 5xx, 429, the key refused after reading it again, the retry budget
	// or the call cap spent, the circuit open).
	ErrUnavailable = errors.New("httpdep: dependency unavailable")
)

// Error is a failed call. errors.Is(err, Kind) is true; the cause (a
// *retry.StatusError, a transport error, a *retry.GiveUpError, a
// *breaker.OpenError) stays reachable with errors.Is/As. An adapter may
// give Kind a name of its own (lambdas/payment does).
type Error struct {
	Kind       error
	Dependency string
	Path       string
	// Status is the HTTP status of the last answer (0 if none).
	Status int
	// Code and Message are the dependency's "codigo" and "mensaje", if any.
	Code, Message string
	// RetryAfter is the last answer's Retry-After (0 if none).
	RetryAfter time.Duration
	// Sent reports whether any attempt left this process and was not
	// refused at the dial: only then may the dependency have applied it.
	Sent bool
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %v", e.Dependency, e.Path, e.Kind)
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// CallCounter caps the calls made under one Idempotency-Key across
// invocations (payment.CallBudget).
type CallCounter interface {
	// Take spends one call of key, or fails: then the call is not made.
	Take(ctx context.Context, key string) error
	// Refund gives back a call that was not made.
	Refund(ctx context.Context, key string)
}

// Config configures a Client. Name, BaseURL, Keys and Retrier are required.
type Config struct {
	// Name of the dependency ("almacen"): the breaker's name and the
	// Dependencia dimension of the metrics.
	Name string
	// BaseURL ("https://almacen.example"); request paths are appended.
	BaseURL string
	// Keys supplies the API key (SecretKey in production).
	Keys KeySource
	// Retrier runs the attempts of each call; its budget is the
	// Breaker's (Settings.Config wires them).
	Retrier *retry.Retrier
	// Breaker, when set, guards every attempt; a retry needs its retry
	// budget's admission (Breaker.AllowRetry).
	Breaker *breaker.Breaker
	// Calls, when set, is taken before each attempt's request and refunded
	// when the breaker refuses it.
	Calls CallCounter
	// ReadTimeout bounds each attempt (default lambdaapi.DefaultReadTimeout).
	ReadTimeout time.Duration
	// HTTPClient defaults to one with dial and TLS-handshake timeouts and
	// no overall timeout (ReadTimeout applies per attempt).
	HTTPClient *http.Client
	// Metrics receives LatencyMetric and ErrorsMetric per attempt (default:
	// discarded). Build it with breaker.MetricsWriter so it carries the
	// Dependencia dimension.
	Metrics metrics.Emitter
	// LatencyMetric and ErrorsMetric name those metrics (default
	// lambdaapi.MetricDependencyLatency and lambdaapi.MetricDependencyErrors).
	LatencyMetric, ErrorsMetric string
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Client calls one dependency. Safe for concurrent use.
type Client struct {
	cfg  Config
	base string
	log  *slog.Logger
}

// New validates cfg, reporting every problem at once.
func New(cfg Config) (*Client, error) {
	var problems []string
	if cfg.Name == "" {
		problems = append(problems, "Name is required")
	}
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
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
		return nil, fmt.Errorf("httpdep: invalid Config: %s", strings.Join(problems, "; "))
	}
	cfg.ReadTimeout = cmp.Or(cfg.ReadTimeout, lambdaapi.DefaultReadTimeout)
	cfg.LatencyMetric = cmp.Or(cfg.LatencyMetric, lambdaapi.MetricDependencyLatency)
	cfg.ErrorsMetric = cmp.Or(cfg.ErrorsMetric, lambdaapi.MetricDependencyErrors)
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
	cfg.Metrics = cmp.Or(cfg.Metrics, metrics.Discard)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	return &Client{cfg: cfg, base: u.String(), log: cfg.Logger.With(slog.String("dependency", cfg.Name))}, nil
}

// Name returns the dependency's name.
func (c *Client) Name() string { return c.cfg.Name }

// Post sends in as JSON to path with the Idempotency-Key key and decodes a
// 2xx answer into out (nil: ignore the body). A failure is an *Error
// marked (lambdas/failure) for the caller: ErrRejected permanent, a 429
// past the attempts RetryAfter its Retry-After (30 s to 15 min), the rest
// transient.
func (c *Client) Post(ctx context.Context, path, key string, in, out any) error {
	if key == "" {
		return failure.Permanent("", c.fail(ErrRejected, path, errors.New("empty idempotency key")))
	}
	body, err := json.Marshal(in)
	if err != nil {
		return failure.Permanent("", c.fail(ErrRejected, path, err))
	}
	var last *Error
	sent := false
	err = c.cfg.Retrier.Do(ctx, retry.Idempotent, func(ctx context.Context, attempt int) error {
		last = c.attempt(ctx, path, key, body, out, attempt > 1)
		if last == nil {
			return nil
		}
		sent = sent || last.Sent
		c.log.LogAttrs(ctx, slog.LevelWarn, "attempt failed", slog.String("path", path),
			slog.String("idempotency_key", key), slog.Int("attempt", attempt), slog.String("error", last.Error()))
		return last
	})
	switch {
	case err == nil:
		return nil
	case last == nil:
		return failure.Transient(c.fail(ErrUnavailable, path, err))
	case last.Kind == ErrUnavailable:
		// Say why the retries stopped (exhausted, budget, deadline) around
		// the last failure's cause.
		e := *last
		e.Err, e.Sent = err, sent
		var g *retry.GiveUpError
		if errors.As(err, &g) {
			e.Err = &retry.GiveUpError{Attempts: g.Attempts, Reason: g.Reason, Class: g.Class, Err: last.Err}
		}
		if e.Status == http.StatusTooManyRequests {
			return failure.RetryAfter(&e, min(max(2*e.RetryAfter, minThrottleWait), maxThrottleWait))
		}
		return failure.Transient(&e)
	default:
		last.Sent = sent
		return failure.Permanent("", last)
	}
}

// Throttle waits: how long a caller waits after the dependency answered
// 429 past the attempts: twice its Retry-After, within these bounds (a
// consumer's message stays hidden for lambdas/sqsbatch's jitter of it,
// half to all of it, never less than the Retry-After).
const (
	minThrottleWait = 30 * time.Second
	maxThrottleWait = 15 * time.Minute
)

func (c *Client) fail(kind error, path string, err error) *Error {
	return &Error{Kind: kind, Dependency: c.cfg.Name, Path: path, Err: err}
}

// attempt makes one request through the call cap and the breaker (its
// retry budget's admission when retrying). The
// error's cause carries its mark for the retrier: the open circuit, the
// cap and rejections are permanent, 409 is transient, the rest keep the
// class retry.Classify gives them.
func (c *Client) attempt(ctx context.Context, path, key string, body []byte, out any, retrying bool) *Error {
	apiKey, err := c.cfg.Keys.APIKey(ctx)
	if err != nil {
		// Before the breaker: a Secrets Manager failure says nothing about
		// the dependency.
		return c.fail(ErrUnavailable, path, fmt.Errorf("API key: %w", err))
	}
	if c.cfg.Calls != nil {
		if err := c.cfg.Calls.Take(ctx, key); err != nil {
			return c.fail(ErrUnavailable, path, failure.Permanent("", err))
		}
	}
	var call *breaker.Call
	if c.cfg.Breaker != nil {
		allow := c.cfg.Breaker.Allow
		if retrying {
			allow = c.cfg.Breaker.AllowRetry
		}
		if call, err = allow(ctx); err != nil {
			if c.cfg.Calls != nil {
				c.cfg.Calls.Refund(context.WithoutCancel(ctx), key) // nothing was sent
			}
			return c.fail(ErrUnavailable, path, failure.Permanent("", err))
		}
	}
	ans, err := c.send(ctx, path, key, apiKey, body)
	if err == nil && ans.status == http.StatusUnauthorized {
		if fresh, kerr := c.cfg.Keys.Refresh(ctx); kerr == nil {
			ans, err = c.send(ctx, path, key, fresh, body)
		} else {
			c.log.LogAttrs(ctx, slog.LevelError, "API key refused and cannot be read again", slog.String("error", kerr.Error()))
		}
	}
	result := c.judge(path, ans, err, out)
	if result != nil {
		result.Sent = err == nil || !retry.IsDialError(err)
	}
	if call != nil {
		var outcome error
		if failing(ans.status, err) {
			outcome = result
		}
		call.Done(ctx, outcome)
	}
	return result
}

// failing reports an attempt that counts as the dependency failing (for
// the breaker and the errors metric): no answer, 5xx or 429.
func failing(status int, err error) bool {
	return err != nil || status >= 500 || status == http.StatusTooManyRequests
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (c *Client) send(ctx context.Context, path, key, apiKey string, body []byte) (answer, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.ReadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return answer{}, failure.Permanent("", err)
	}
	// Without GetBody net/http never replays the request on its own, so
	// every attempt is one the retry policy (and the attempts guardrail)
	// counts.
	req.GetBody = nil
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("Authorization", "Bearer "+apiKey)
	h.Set("Idempotency-Key", key)
	start := time.Now()
	resp, err := c.cfg.HTTPClient.Do(req)
	var a answer
	if err == nil {
		a.status, a.header = resp.StatusCode, resp.Header
		a.body, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
	}
	ms := []metrics.Metric{{Name: c.cfg.LatencyMetric, Unit: metrics.UnitMilliseconds, Value: float64(time.Since(start).Microseconds()) / 1000}}
	if failing(a.status, err) {
		ms = append(ms, metrics.Metric{Name: c.cfg.ErrorsMetric, Unit: metrics.UnitCount, Value: 1})
	}
	_ = c.cfg.Metrics.Write(ms...)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			err = fmt.Errorf("no answer within the read timeout %s: %w", c.cfg.ReadTimeout, err)
		}
		return answer{}, err
	}
	return a, nil
}

// judge turns an answer (or its absence) into nil or an *Error.
func (c *Client) judge(path string, a answer, err error, out any) *Error {
	if err != nil {
		return c.fail(ErrUnavailable, path, err)
	}
	if a.status >= 200 && a.status < 300 {
		if out == nil {
			return nil
		}
		if derr := json.Unmarshal(a.body, out); derr != nil {
			// Applied, but unreadable: a retry with the same key gets the
			// stored answer again.
			return &Error{Kind: ErrUnavailable, Dependency: c.cfg.Name, Path: path, Status: a.status,
				Err: fmt.Errorf("undecodable answer: %w", derr)}
		}
		return nil
	}
	var body struct {
		Codigo  string `json:"codigo"`
		Mensaje string `json:"mensaje"`
	}
	_ = json.Unmarshal(a.body, &body)
	se := &retry.StatusError{StatusCode: a.status, Body: retry.Truncate(string(a.body), 256)}
	if ra, ok := retry.ParseRetryAfter(a.header.Get("Retry-After"), time.Now()); ok {
		se.RetryAfter = ra
	}
	e := &Error{Kind: ErrUnavailable, Dependency: c.cfg.Name, Path: path, Status: a.status, Code: body.Codigo,
		Message: retry.Truncate(body.Mensaje, 256), RetryAfter: se.RetryAfter, Err: se}
	switch {
	case a.status == http.StatusConflict: // the same key still running at the dependency
		e.Err = failure.Transient(se)
	case a.status == http.StatusTooManyRequests || a.status >= 500:
	case a.status == http.StatusUnauthorized:
		// docs/design.md#http-dependencies: the key, not the request, was refused.
		e.Err = failure.Permanent("", fmt.Errorf("API key refused after reading it again: %w", se))
	default:
		e.Kind, e.Err = ErrRejected, failure.Permanent("", se)
	}
	return e
}
