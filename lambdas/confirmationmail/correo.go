// Package correo is the consumer of cola-mercadofresco-correo-confirmacion:
// it sends the confirmation e-mail of every confirmed order
// (PedidoConfirmado from the SNS fan-out, raw delivery), and never two.
//
// # Providers and when each is used
//
// The primary provider is Amazon SES v2 (SendEmail with the environment's
// configuration set and sender identity); the secondary is an HTTP e-mail
// API (lambdas/httpdep) that applies an Idempotency-Key once. Each has its
// own circuit breaker shared in Valkey.
//
//   - SES first. If its circuit is open, or it answers that it did not take
//     the e-mail (throttling: TooManyRequests, LimitExceeded; a 5xx; an
//     account-level refusal such as sending paused), the e-mail goes
//     through the secondary at once, in the same invocation.
//   - If the secondary cannot take it either (its circuit open, or every
//     attempt refused before a request left), the e-mail is delayed: the
//     message goes back to the queue for 300 s (lambdas/degrade, with the
//     delayed copy on its last receive, so a long double outage does not
//     dead-letter it), and both providers are tried again then. The queue's
//     age alarm (30 minutes) pages before a delay becomes a complaint.
//   - An e-mail a provider refuses (an invalid address, refused content) is
//     a data error: to the DLQ with the reason, no other provider tried.
//
// # Never two e-mails per order
//
// An e-mail whose order was confirmed longer ago than the consumer's replay
// window (IDEMPOTENCY_WINDOW) is refused before anything is claimed or
// sent, and dead-lettered as expired-idempotency-window
// (lambdas/replaywindow). Inside the window, three records, all keyed by
// correo-confirmacion:<pedido_id>:
//
//  1. The idempotency record (lambdas/idempotency): one invocation at a
//     time per order, and every repeat after a send gets the stored
//     result without sending.
//  2. The send record (Envios, "<key>:envio", kept as long as the
//     consumer's replay window, 45 days): written before a provider is
//     asked, naming it, and marked ENVIADO with the provider's id once it
//     accepted. It outlives a released idempotency record, so the next
//     delivery knows which provider may already hold the e-mail: once a
//     provider may have it, no other provider is ever asked. If the
//     provider did not take it (answers above), the record is removed and
//     the other provider may be tried.
//  3. The secondary's own Idempotency-Key: a repeat to it with the same key
//     (after a timeout, or after this Lambda died between its answer and
//     our records) returns the first e-mail's answer without sending.
//
// The remaining gap is SES, which has no idempotency key: if SendEmail got
// no answer (a timeout, a reset), or this Lambda died between SES's answer
// and the ENVIADO mark, the e-mail may or may not have been sent. Sending
// it again could be the second e-mail, and not sending could lose it; the
// consumer does neither: the message goes to the DLQ with the reason
// "envio_incierto" (and the CorreoIncierto metric), the SES client never
// retries SendEmail by itself, and the e-mail carries the tag pedido_id so
// that the configuration set's events show whether it left. The DLQ runbook
// says what to do (docs/runbooks/dlq.md, "Confirmation e-mail"). This is
// rare (a lost answer from SES or a crash in a window of milliseconds) and
// visible, where the alternative is silent duplicates.
package confirmationmail

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"strings"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer/consumerapi"
)

// Transient outcomes of Mailer.Send.
var (
	// ErrBothUnavailable: neither provider took the e-mail; it waits.
	ErrBothUnavailable = errors.New("correo: no provider can take the e-mail now")
	// ErrAskAgain: the secondary may hold the e-mail and has not confirmed
	// it; only the secondary, with the same key, may be asked again.
	ErrAskAgain = errors.New("correo: the secondary provider may hold the e-mail; ask it again")
)

// Mailer sends an e-mail through the primary provider, or the secondary,
// at most once per key (see the package documentation). Each Send must
// run under the key's idempotency lock.
type Mailer struct {
	Primary, Secondary Provider
	Envios             *Envios
	// Metrics returns the emitter of a provider (CorreoEnviado with its
	// Proveedor dimension); nil discards.
	Metrics func(provider string) metrics.Emitter
	Logger  *slog.Logger
}

// Send sends m under key and returns the record of the send.
func (s *Mailer) Send(ctx context.Context, key string, m Mensaje) (Envio, error) {
	prev, err := s.Envios.Get(ctx, key)
	if err != nil {
		return Envio{}, err
	}
	switch {
	case prev != nil && prev.Estado == EstadoEnviado:
		return Envio{Proveedor: prev.Proveedor, ID: prev.ID}, nil
	case prev != nil && prev.Proveedor == s.Secondary.Name():
		// The secondary may hold it: only the secondary, with the same key.
		return s.via(ctx, s.Secondary, key, m, true)
	case prev != nil:
		return Envio{}, fmt.Errorf("%w: %s was asked for %s by an earlier delivery that did not record the answer", ErrUncertain, prev.Proveedor, key)
	}
	res, perr := s.via(ctx, s.Primary, key, m, false)
	if !errors.Is(perr, ErrNotSent) {
		return res, perr
	}
	s.log().LogAttrs(ctx, slog.LevelWarn, "primary provider did not take the e-mail; using the secondary",
		slog.String("idempotency_key", key), slog.String("reason", perr.Error()))
	res, serr := s.via(ctx, s.Secondary, key, m, false)
	if errors.Is(serr, ErrNotSent) {
		return Envio{}, fmt.Errorf("%w: %w; %w", ErrBothUnavailable, perr, serr)
	}
	return res, serr
}

// via asks p, keeping the send record: written before, ENVIADO after a
// success, removed when p did not take it or refused it, kept when p may
// have it.
func (s *Mailer) via(ctx context.Context, p Provider, key string, m Mensaje, resume bool) (Envio, error) {
	if !resume {
		if err := s.Envios.Begin(ctx, key, p.Name()); err != nil {
			return Envio{}, err
		}
	}
	id, err := p.Send(ctx, key, m)
	if err == nil {
		if merr := s.Envios.Sent(ctx, key, p.Name(), id); merr != nil {
			// Sent, but not marked: the idempotency record (still to be
			// completed by the caller) and, for the secondary, its key
			// cover a repeat.
			s.log().LogAttrs(ctx, slog.LevelError, "e-mail sent but its send record was not updated",
				slog.String("idempotency_key", key), slog.String("error", merr.Error()))
		}
		s.count(p.Name())
		return Envio{Proveedor: p.Name(), ID: id}, nil
	}
	switch {
	case errors.Is(err, ErrRejected) || (errors.Is(err, ErrNotSent) && !resume):
		// p does not have it (a provider with an idempotency key that
		// refuses a repeat never accepted the first): another may be asked.
		if ferr := s.Envios.Forget(ctx, key, p.Name()); ferr != nil {
			return Envio{}, errors.Join(err, ferr)
		}
		return Envio{}, err
	case p == s.Secondary:
		// An earlier request may be held under the key: the record stays,
		// and the secondary is asked again later.
		return Envio{}, fmt.Errorf("%w: %w", ErrAskAgain, err)
	case !errors.Is(err, ErrUncertain):
		return Envio{}, fmt.Errorf("%w: %w", ErrUncertain, err)
	default:
		return Envio{}, err
	}
}

func (s *Mailer) count(provider string) {
	if s.Metrics == nil {
		return
	}
	if e := s.Metrics(provider); e != nil {
		_ = e.Write(metrics.Metric{Name: consumerapi.MetricCorreoEnviado, Unit: metrics.UnitCount, Value: 1})
	}
}

func (s *Mailer) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// Pedido is the confirmed order as this consumer validates it.
type Pedido struct{ eventsapi.PedidoConfirmado }

// Validate implements sqsbatch.Validator: an e-mail without an address or
// an amount is poison.
func (p *Pedido) Validate() error {
	var problems []error
	if at := strings.LastIndex(p.Cliente.Email, "@"); at < 1 || at == len(p.Cliente.Email)-1 || strings.ContainsAny(p.Cliente.Email, " \r\n<>\",") {
		problems = append(problems, fmt.Errorf("cliente.email %q is not an e-mail address", p.Cliente.Email))
	}
	if p.TotalCentimos <= 0 {
		problems = append(problems, fmt.Errorf("total_centimos %d is not positive", p.TotalCentimos))
	}
	if len(p.Moneda) != 3 {
		problems = append(problems, fmt.Errorf("moneda %q is not an ISO 4217 code", p.Moneda))
	}
	return errors.Join(problems...)
}

// Render writes the confirmation e-mail of p (Spanish, plain text and HTML).
func Render(p *Pedido) Mensaje {
	saludo := "Hola"
	if n := strings.TrimSpace(p.Cliente.Nombre); n != "" {
		saludo += " " + n
	}
	var txt, rows strings.Builder
	fmt.Fprintf(&txt, "%s:\n\nHemos confirmado tu pedido %s.\n\n", saludo, p.PedidoID)
	for _, l := range p.Lineas {
		fmt.Fprintf(&txt, "  %d x %s  %s\n", l.Cantidad, l.SKU, importe(l.PrecioCentimos*l.Cantidad, p.Moneda))
		fmt.Fprintf(&rows, "<tr><td>%d</td><td>%s</td><td>%s</td></tr>", l.Cantidad, html.EscapeString(l.SKU), importe(l.PrecioCentimos*l.Cantidad, p.Moneda))
	}
	fmt.Fprintf(&txt, "\nTotal: %s\n\nGracias por comprar en MercadoFresco.\n", importe(p.TotalCentimos, p.Moneda))
	body := fmt.Sprintf(`<html><body><p>%s:</p><p>Hemos confirmado tu pedido <b>%s</b>.</p><table>%s</table><p>Total: <b>%s</b></p><p>Gracias por comprar en MercadoFresco.</p></body></html>`,
		html.EscapeString(saludo), html.EscapeString(p.PedidoID), rows.String(), importe(p.TotalCentimos, p.Moneda))
	return Mensaje{
		PedidoID: p.PedidoID, Para: p.Cliente.Email, Nombre: p.Cliente.Nombre,
		Asunto: "Tu pedido " + p.PedidoID + " está confirmado", Texto: txt.String(), HTML: body,
	}
}

// importe formats integer cents: 4820 EUR is "48,20 EUR".
func importe(centimos int64, moneda string) string {
	sign := ""
	if centimos < 0 {
		sign, centimos = "-", -centimos
	}
	return fmt.Sprintf("%s%d,%02d %s", sign, centimos/100, centimos%100, moneda)
}
