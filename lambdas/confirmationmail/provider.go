package confirmationmail

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sesv2/types"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// What a provider's failure says about the e-mail (match with errors.Is).
var (
	// ErrNotSent: the provider did not take the e-mail (throttled, down,
	// its circuit open): another provider may send it.
	ErrNotSent = errors.New("correo: not sent")
	// ErrRejected: the provider refused this e-mail (an invalid address,
	// refused content). No provider should be tried: a data error.
	ErrRejected = errors.New("correo: rejected")
	// ErrUncertain: the provider may have sent it (the request left and no
	// answer came back). Only the same provider, with the same idempotency
	// key, may be asked again; SES has no such key, so an uncertain SES
	// send is never repeated (see the package documentation).
	ErrUncertain = errors.New("correo: outcome unknown")
)

// Mensaje is a rendered confirmation e-mail.
type Mensaje struct {
	PedidoID             string
	Para, Nombre, Asunto string
	Texto, HTML          string
}

// Provider sends e-mails. Send returns the provider's message id, or an
// error matching ErrNotSent, ErrRejected or ErrUncertain (anything else is
// treated as ErrUncertain).
type Provider interface {
	Name() string
	Send(ctx context.Context, key string, m Mensaje) (id string, err error)
}

// SESAPI is the part of the SES v2 client SES uses.
type SESAPI interface {
	SendEmail(ctx context.Context, in *sesv2.SendEmailInput, optFns ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error)
}

// SES sends through Amazon SES v2 with a configuration set, guarded by its
// circuit breaker. The client must not retry SendEmail on its own
// (RetryMaxAttempts 1, see NewSESClientOptions): a retried SendEmail whose
// first answer was lost sends the e-mail twice.
type SES struct {
	Client           SESAPI
	From             string
	ConfigurationSet string
	// Breaker (optional) counts throttling, SES-side failures and lost
	// answers as SES failing; a refused e-mail is SES working.
	Breaker *breaker.Breaker
	// Name of the provider (default "ses").
	ProviderName string
	// Timeout bounds one SendEmail (default DefaultSESTimeout).
	Timeout time.Duration
}

// DefaultSESTimeout bounds one SendEmail call (SES answers in well under a
// second; a call still open after this is treated as unanswered).
const DefaultSESTimeout = 10 * time.Second

// Name implements Provider.
func (s *SES) Name() string { return cmp.Or(s.ProviderName, "ses") }

// SES error codes and what they mean for the e-mail.
var (
	sesThrottled = []string{"TooManyRequestsException", "LimitExceededException", "Throttling", "ThrottlingException"}
	sesRejected  = []string{"MessageRejected", "BadRequestException"}
)

// Send implements Provider.
func (s *SES) Send(ctx context.Context, key string, m Mensaje) (string, error) {
	var call *breaker.Call
	if s.Breaker != nil {
		c, err := s.Breaker.Allow(ctx)
		if err != nil {
			return "", fmt.Errorf("%w: ses: %w", ErrNotSent, err)
		}
		call = c
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultSESTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := s.Client.SendEmail(sctx, &sesv2.SendEmailInput{
		FromEmailAddress:     aws.String(s.From),
		Destination:          &types.Destination{ToAddresses: []string{address(m.Nombre, m.Para)}},
		ConfigurationSetName: aws.String(s.ConfigurationSet),
		Content: &types.EmailContent{Simple: &types.Message{
			Subject: &types.Content{Data: aws.String(m.Asunto), Charset: aws.String("UTF-8")},
			Body: &types.Body{
				Text: &types.Content{Data: aws.String(m.Texto), Charset: aws.String("UTF-8")},
				Html: &types.Content{Data: aws.String(m.HTML), Charset: aws.String("UTF-8")},
			},
		}},
		// Tags find the e-mail in the configuration set's events (the
		// runbook's check of an uncertain send).
		EmailTags: []types.MessageTag{
			{Name: aws.String("pedido_id"), Value: aws.String(tagValue(m.PedidoID))},
			{Name: aws.String("tipo"), Value: aws.String("confirmacion")},
		},
	})
	verdict := classifySES(err)
	if call != nil {
		var outcome error
		if verdict != nil && !errors.Is(verdict, ErrRejected) {
			outcome = verdict
		}
		call.Done(ctx, outcome)
	}
	if verdict != nil {
		return "", verdict
	}
	return aws.ToString(out.MessageId), nil
}

// classifySES reads an SES failure: an answer from SES (an API error with
// an HTTP status) means the e-mail was not accepted; no answer means it may
// have been, unless the connection was never made.
func classifySES(err error) error {
	if err == nil {
		return nil
	}
	var api smithy.APIError
	var resp *awshttp.ResponseError
	// The SDK wraps a request that timed out in a ResponseError too, with
	// no response (status 0).
	hasAnswer := errors.As(err, &resp) && resp.HTTPResponse() != nil && resp.HTTPResponse().Response != nil && resp.HTTPStatusCode() > 0
	switch {
	case errors.As(err, &api) && slices.Contains(sesRejected, api.ErrorCode()):
		return fmt.Errorf("%w: ses: %w", ErrRejected, err)
	case errors.As(err, &api) && slices.Contains(sesThrottled, api.ErrorCode()):
		return fmt.Errorf("%w: ses throttled: %w", ErrNotSent, err)
	case hasAnswer:
		// 5xx, a suspended account, sending paused, an unverified
		// identity, a missing configuration set: SES did not take it.
		return fmt.Errorf("%w: ses: %w", ErrNotSent, err)
	case retry.IsDialError(err):
		return fmt.Errorf("%w: ses unreachable: %w", ErrNotSent, err)
	default:
		return fmt.Errorf("%w: ses gave no answer: %w", ErrUncertain, err)
	}
}

var tagUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.@-]`)

// tagValue makes s a valid SES tag value (ASCII letters, digits, _ - . @;
// at most 256 characters).
func tagValue(s string) string {
	s = tagUnsafe.ReplaceAllString(s, "_")
	if len(s) > 256 {
		s = s[:256]
	}
	return cmp.Or(s, "_")
}

// address formats "Nombre <para>" (quoting the name), or the bare address.
func address(nombre, para string) string {
	nombre = strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r == '\r' || r == '\n' || r == '<' || r == '>' {
			return -1
		}
		return r
	}, strings.TrimSpace(nombre))
	if nombre == "" {
		return para
	}
	return fmt.Sprintf("%q <%s>", nombre, para)
}

// PathCorreos is the secondary provider's endpoint.
const PathCorreos = "/v1/correos"

// SolicitudCorreo is the body of POST /v1/correos.
type SolicitudCorreo struct {
	Remitente string `json:"remitente"`
	Para      string `json:"para"`
	Nombre    string `json:"nombre,omitempty"`
	Asunto    string `json:"asunto"`
	Texto     string `json:"texto"`
	HTML      string `json:"html"`
	PedidoID  string `json:"pedido_id"`
}

// HTTPProvider is the secondary provider: an HTTP e-mail API through
// lambdas/httpdep (its breaker, retry budget, API key), which applies an
// Idempotency-Key once: a repeat with the same key never sends twice.
type HTTPProvider struct {
	Client *httpdep.Client
	From   string
}

// Name implements Provider.
func (h *HTTPProvider) Name() string { return h.Client.Name() }

// Send implements Provider.
func (h *HTTPProvider) Send(ctx context.Context, key string, m Mensaje) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := h.Client.Post(ctx, PathCorreos, key, SolicitudCorreo{
		Remitente: h.From, Para: m.Para, Nombre: m.Nombre, Asunto: m.Asunto, Texto: m.Texto, HTML: m.HTML, PedidoID: m.PedidoID,
	}, &out)
	var he *httpdep.Error
	switch {
	case err == nil:
		return out.ID, nil
	case errors.Is(err, httpdep.ErrRejected):
		return "", fmt.Errorf("%w: %w", ErrRejected, err)
	case errors.As(err, &he) && !he.Sent:
		return "", fmt.Errorf("%w: %w", ErrNotSent, err)
	default:
		// A request left: the provider may hold the e-mail under the key.
		return "", fmt.Errorf("%w: %w", ErrUncertain, err)
	}
}

// NewSESClientOptions is the option a production SES client needs: no SDK
// retries of SendEmail (AWS_MAX_ATTEMPTS stays 2 for the other clients).
func NewSESClientOptions(o *sesv2.Options) { o.RetryMaxAttempts = 1 }
