// Package confirmationmail is the consumer of
// cola-mercadofresco-correo-confirmacion: it sends the confirmation e-mail of
// every confirmed order, and never two.
//
// SES v2 first; the secondary HTTP provider (lambdas/httpdep) at once when
// SES's circuit is open or it did not take the e-mail; when neither can, the
// message waits (sqsconsumer.Plan). A refused e-mail is Permanent. An e-mail
// older than the replay window is refused before anything is sent. Three
// records hold it to one e-mail: the idempotency record, the send record
// (Envios, naming the provider that may hold it, as long as the window) and
// the secondary's Idempotency-Key. A SendEmail whose outcome is unknown is
// dead-lettered as envio_incierto, never sent again. Reasoning:
// docs/design.md#confirmation-mail.
package confirmationmail

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"strings"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
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
		_ = e.Write(metrics.Metric{Name: lambdaapi.MetricCorreoEnviado, Unit: metrics.UnitCount, Value: 1})
	}
}

func (s *Mailer) log() *slog.Logger { return cmp.Or(s.Logger, slog.Default()) }

// Render writes the confirmation e-mail of p (Spanish, plain text and HTML).
func Render(p *eventsapi.PedidoConfirmado) Mensaje {
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
