package confirmationmail

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// Error codes recorded as FALLIDO in the idempotency table (every repeat
// of the order gets them back without sending).
const (
	CodeRechazado = "rechazado"
	CodeIncierto  = "envio_incierto"
)

// Deps are the consumer's dependencies; Store, Plan (it delays e-mails
// no provider can take now) and Mailer are required.
type Deps struct {
	sqsconsumer.OnceDeps
	Mailer *Mailer
	// Metrics receives CorreoAplazado and CorreoIncierto (nil discards).
	Metrics metrics.Emitter
}

// NewProcessor returns the batch processor of the consumer: the e-mail
// runs through sqsconsumer's Steps (replay window, idempotency claim,
// degrade plan). The idempotency records and the send records must live
// at least as long as the replay window.
func NewProcessor(s sqsconsumer.Settings, d Deps) (*sqsbatch.Processor, error) {
	if d.Mailer == nil {
		return nil, errors.New("correo: Mailer is required")
	}
	steps, err := s.Steps(d.Store, d.Plan)
	if err != nil {
		return nil, err
	}
	if d.Mailer.Envios != nil && d.Mailer.Envios.ttl() < steps.Window.Max {
		return nil, fmt.Errorf("correo: the send records live %s, less than the %s replay window: a redriven e-mail whose idempotency record was released could go to another provider", d.Mailer.Envios.ttl(), steps.Window.Max)
	}
	d.Metrics = cmp.Or(d.Metrics, metrics.Discard)
	d.Logger = cmp.Or(d.Logger, slog.Default())
	steps.Defer = func(err error) bool {
		if errors.Is(err, ErrBothUnavailable) || errors.Is(err, ErrAskAgain) && errors.Is(err, breaker.ErrOpen) {
			_ = d.Metrics.Write(metrics.Metric{Name: lambdaapi.MetricCorreoAplazado, Unit: metrics.UnitCount, Value: 1})
			return true
		}
		return false
	}
	return s.Batch(sqsbatch.Config{
		Handler:        sqsbatch.JSON(handler(d, steps)),
		DLQ:            d.DLQ,
		Visibility:     d.Visibility,
		Envelope:       consumers.Mail.Envelope(),
		IdempotencyKey: sqsconsumer.KeyByPedido(idempotency.KeyCorreoConfirmacion),
		Logger:         d.Logger,
	})
}

func handler(d Deps, steps sqsconsumer.Steps) func(ctx context.Context, rec *sqsbatch.Record, p *eventsapi.PedidoConfirmado) error {
	return func(ctx context.Context, rec *sqsbatch.Record, p *eventsapi.PedidoConfirmado) error {
		msg := Render(p)
		res, err := sqsconsumer.Once(ctx, steps, rec, msg, func(ctx context.Context, key string) (Envio, error) {
			res, err := d.Mailer.Send(ctx, key, msg)
			switch {
			case errors.Is(err, ErrAskAgain):
				return res, err // transient: the secondary is asked again with the same key
			case errors.Is(err, ErrRejected):
				return res, failure.Permanent(CodeRechazado, err)
			case errors.Is(err, ErrUncertain):
				_ = d.Metrics.Write(metrics.Metric{Name: lambdaapi.MetricCorreoIncierto, Unit: metrics.UnitCount, Value: 1})
				return res, failure.Permanent(CodeIncierto, fmt.Errorf("%w; the e-mail may have been sent: see docs/runbooks/dlq.md (confirmation e-mail) before any redrive", err))
			}
			return res, err
		})
		if err == nil {
			rec.Logger.Info("confirmation e-mail sent", slog.String("pedido_id", p.PedidoID),
				slog.String("proveedor", res.Proveedor), slog.String("id_proveedor", res.ID))
		}
		return err
	}
}

// FromRuntime builds the consumer with real clients (the
// correo-confirmacion main): the idempotency table (IDEMPOTENCY_TABLE_NAME,
// also holding the send records; both kinds of record live as long as
// IDEMPOTENCY_WINDOW), SES v2 (CORREO_REMITENTE,
// SES_CONFIGURATION_SET; no SDK retries of SendEmail) behind the "ses"
// breaker, the secondary provider (CORREO_SECUNDARIO_* variables), the
// SQS client and the degrade plan (MAX_RECEIVE_COUNT).
func FromRuntime(ctx context.Context, rt *sqsconsumer.Runtime) (*sqsbatch.Processor, error) {
	from := rt.Env.Required(lambdaapi.EnvCorreoRemitente)
	configSet := rt.Env.Required(lambdaapi.EnvSESConfigurationSet)
	d, secondary, err := rt.HTTPDeps(lambdaapi.PrefixCorreoSecundario, lambdaapi.NameCorreoSecundario)
	if err != nil {
		return nil, err
	}
	breakers, err := rt.Breakers()
	if err != nil {
		return nil, err
	}
	sesBreaker, err := breakers.Breaker(lambdaapi.NameSES, DefaultSESTimeout+15*time.Second)
	if err != nil {
		return nil, err
	}
	env := rt.Settings.Environment
	mailer := &Mailer{
		Primary:   &SES{Client: sesv2.NewFromConfig(rt.AWS, NewSESClientOptions), From: from, ConfigurationSet: configSet, Breaker: sesBreaker},
		Secondary: &HTTPProvider{Client: secondary, From: from},
		Envios:    &Envios{DB: dynamodb.NewFromConfig(rt.AWS), Table: rt.Env.Required(lambdaapi.EnvIdempotencyTable), TTL: rt.Settings.IdempotencyWindow},
		Metrics: func(provider string) metrics.Emitter {
			return metrics.NewWriter(os.Stdout, lambdaapi.Namespace, map[string]string{lambdaapi.DimensionEnvironment: env, lambdaapi.DimensionProveedor: provider})
		},
		Logger: rt.Log,
	}
	return NewProcessor(rt.Settings, Deps{OnceDeps: d, Mailer: mailer, Metrics: metrics.ForEnvironment(os.Stdout, env)})
}
