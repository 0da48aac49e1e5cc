// Package orderstart starts the order workflow (mercadofresco-procesar-pedido)
// exactly once per order: it consumes the buffer queue a rule on
// bus-mercadofresco fills with PedidoCreado events and calls StartExecution
// with a name derived from the order and its payment attempt
// (ExecutionNameFor) and, as input, the event's detail with the order's
// stock movements as SQS batch entries (eventsapi.WorkflowInput); ExecutionAlreadyExists is success, since Step
// Functions refuses a second execution of a name for 90 days. An event whose
// creado_en is older than its window (eventsapi.StarterWindow, 89 days) is
// refused as expired-idempotency-window before Step Functions is called. An
// event that is not a valid version-1 PedidoCreado, or whose charge
// signature (lambdas/signing) is missing or does not match it, is poison; a
// StartExecution error about the request itself (InvalidExecutionInput,
// ValidationException, InvalidName, MissingRequiredParameter) is permanent
// (dead-lettered with its reason), any other failure is transient. Why:
// docs/design.md#replay-windows.
package orderstart

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/lambdas/consumers"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/signing"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// StartExecutionAPI is the one Step Functions operation the starter needs;
// *sfn.Client implements it.
type StartExecutionAPI interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, optFns ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
}

// Execution names: Step Functions allows 1..80 characters and, for
// executions logged to CloudWatch, only ASCII letters, digits, '-' and '_'.
const (
	MaxExecutionName = 80
	// Prefix of the name of an order whose id fits as is.
	Prefix = "pedido-"
	// HashedPrefix starts the name of an order whose id had to be changed
	// (characters outside [A-Za-z0-9_-], or too long). It differs from
	// Prefix at its 7th character, so no clean id can produce a hashed name.
	HashedPrefix = "pedido_"
	hashHex      = 16 // 64 bits of SHA-256
)

// ExecutionName derives the execution name from the order id:
// "pedido-<id>" when the id is made of [A-Za-z0-9_-] and fits in 80
// characters; otherwise "pedido_<sanitised prefix>_<16 hex of SHA-256(id)>",
// so two different ids never share a name (the hash tells apart ids that
// sanitise alike) and the same id always gets the same name.
func ExecutionName(pedidoID string) string {
	if clean(pedidoID) && len(Prefix)+len(pedidoID) <= MaxExecutionName {
		return Prefix + pedidoID
	}
	return hashedName(pedidoID, "_", pedidoID)
}

// ExecutionNameFor is the execution name of payment attempt intento of an
// order: ExecutionName(pedidoID) for the first attempt (intento 0 or 1),
// and for a retry "pedido_<sanitised prefix>_i<n>_<16 hex of SHA-256>" of
// the id and the attempt, which no first attempt's name can equal.
func ExecutionNameFor(pedidoID string, intento int) string {
	if intento <= 1 {
		return ExecutionName(pedidoID)
	}
	return hashedName(pedidoID, fmt.Sprintf("_i%d_", intento), fmt.Sprintf("%s\x00intento=%d", pedidoID, intento))
}

// hashedName is HashedPrefix, the sanitised prefix of pedidoID that fits,
// tag and the first hashHex hex digits of SHA-256(hashed).
func hashedName(pedidoID, tag, hashed string) string {
	sum := sha256.Sum256([]byte(hashed))
	room := MaxExecutionName - len(HashedPrefix) - len(tag) - hashHex
	var b strings.Builder
	for _, r := range pedidoID {
		if b.Len() >= room {
			break
		}
		if allowed(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return HashedPrefix + b.String() + tag + hex.EncodeToString(sum[:])[:hashHex]
}

func allowed(r rune) bool {
	return r == '-' || r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
}

func clean(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !allowed(r) })
}

// Starter starts one execution per order.
type Starter struct {
	api          StartExecutionAPI
	stateMachine string
	log          *slog.Logger
	window       sqsbatch.Window
	verifier     signing.Verifier
}

// Option configures New.
type Option func(*Starter)

// WithWindow shortens the replay window (default
// eventsapi.StarterWindow; a longer one is refused: Step Functions would
// have forgotten the execution's name).
func WithWindow(d time.Duration) Option { return func(s *Starter) { s.window.Max = d } }

// WithVerifier sets the check of each event's charge signature (required:
// the starter starts only orders the outbox publisher signed).
func WithVerifier(v signing.Verifier) Option { return func(s *Starter) { s.verifier = v } }

// New returns a Starter for the state machine ARN.
func New(api StartExecutionAPI, stateMachineARN string, log *slog.Logger, opts ...Option) (*Starter, error) {
	if api == nil || stateMachineARN == "" {
		return nil, errors.New("starter: the Step Functions client and the state machine ARN are required")
	}
	log = cmp.Or(log, slog.Default())
	s := &Starter{api: api, stateMachine: stateMachineARN, log: log,
		window: sqsbatch.Window{Max: consumers.Starter.Window, CreatedAt: consumers.Starter.CreatedAtKey}}
	for _, o := range opts {
		o(s)
	}
	if s.window.Now == nil {
		s.window.Now = time.Now
	}
	if s.verifier == nil {
		return nil, errors.New("starter: a charge verifier is required (WithVerifier): the starter starts only orders the outbox publisher signed")
	}
	if s.window.Max > eventsapi.StarterWindow {
		return nil, fmt.Errorf("starter: a replay window of %s is longer than %s: Step Functions keeps execution names %s, so an older event could start a second execution",
			sqsbatch.Days(s.window.Max), sqsbatch.Days(eventsapi.StarterWindow), sqsbatch.Days(eventsapi.ExecutionNameRetention))
	}
	if err := s.window.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Result says what Start did.
type Result struct {
	Name string
	// ExecutionARN is set when this call started the execution (or Step
	// Functions answered with the running execution of the same name and
	// input).
	ExecutionARN string
	// AlreadyStarted is true when an execution of that name already existed.
	AlreadyStarted bool
}

// Start starts the workflow for one PedidoCreado event envelope. An invalid
// event is poison (failure.Poison); ExecutionAlreadyExists is success. It
// does not apply the replay window: Handler does, before calling it.
func (s *Starter) Start(ctx context.Context, body []byte) (Result, error) {
	env, pedido, err := consumers.DecodeCreated(body)
	if err != nil {
		return Result{}, failure.Poison(err)
	}
	name := ExecutionNameFor(pedido.PedidoID, pedido.Intento)
	charge := signing.Charge{EventID: pedido.IDEvento, OrderID: pedido.PedidoID, AmountCents: pedido.TotalCentimos, Currency: pedido.Moneda, CardToken: pedido.TokenTarjeta}
	switch err := s.verifier.Verify(ctx, charge, pedido.Firma); {
	case errors.Is(err, signing.ErrInvalid):
		return Result{Name: name}, failure.Poisonf("starter: order %s (event %q, %d %s) refused, no execution started: its firma is not the outbox publisher's signature of this charge: %v",
			pedido.PedidoID, pedido.IDEvento, pedido.TotalCentimos, pedido.Moneda, err)
	case err != nil:
		return Result{Name: name}, fmt.Errorf("starter: cannot check the signature of order %s: %w", pedido.PedidoID, err)
	}
	// The detail's fields as published (its firma goes on to cobro, which
	// verifies it again), plus the order's stock movements as batch entries.
	input, err := eventsapi.WorkflowInput(env.Detail, pedido, s.window.Now())
	if err != nil {
		return Result{Name: name}, failure.Poison(err)
	}
	out, err := s.api.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(s.stateMachine),
		Name:            aws.String(name),
		Input:           aws.String(string(input)),
	})
	var exists *types.ExecutionAlreadyExists
	switch {
	case errors.As(err, &exists):
		s.log.InfoContext(ctx, "order already has its execution", slog.String("pedido_id", pedido.PedidoID), slog.String("ejecucion", name), slog.String("id_evento", env.ID))
		return Result{Name: name, AlreadyStarted: true}, nil
	case permanentStartError(err):
		return Result{Name: name}, failure.Permanent("", fmt.Errorf("starter: StartExecution %s refused the request (retrying cannot change it): %w", name, err))
	case err != nil:
		return Result{Name: name}, fmt.Errorf("starter: StartExecution %s: %w", name, err)
	}
	s.log.InfoContext(ctx, "execution started", slog.String("pedido_id", pedido.PedidoID), slog.String("ejecucion", name), slog.String("id_evento", env.ID))
	return Result{Name: name, ExecutionARN: aws.ToString(out.ExecutionArn)}, nil
}

// permanentStartErrors are the StartExecution error codes about the
// request itself: the same message would be refused on every receive.
var permanentStartErrors = map[string]bool{
	"InvalidExecutionInput":    true,
	"ValidationException":      true,
	"InvalidName":              true,
	"MissingRequiredParameter": true,
}

// permanentStartError reports whether err is one of permanentStartErrors
// (a modelled error type or any API error with that code).
func permanentStartError(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && permanentStartErrors[api.ErrorCode()]
}

// Handler is the sqsbatch handler: one Start per record, unless the
// record's event is older than the replay window (a permanent failure
// wrapping sqsbatch.ErrExpired, without a call to Step Functions).
func (s *Starter) Handler() sqsbatch.Handler {
	return sqsbatch.HandlerFunc(func(ctx context.Context, rec *sqsbatch.Record) error {
		if err := s.window.Check(rec); err != nil {
			return err
		}
		_, err := s.Start(ctx, []byte(rec.Body()))
		return err
	})
}

// BatchConfig is the sqsbatch configuration the starter runs with: the
// version lives in the event's detail, the order id and the event's
// creation time are required, and records of one order are handled one
// after the other.
func BatchConfig(s *Starter) sqsbatch.Config {
	return sqsbatch.Config{
		Handler:  s.Handler(),
		Envelope: consumers.Starter.Envelope(),
		IdempotencyKey: func(rec *sqsbatch.Record) (string, error) {
			var env struct {
				Detail struct {
					PedidoID string `json:"pedido_id"`
					Intento  int    `json:"intento"`
				} `json:"detail"`
			}
			if err := rec.Decode(&env); err != nil {
				return "", err
			}
			return "ejecucion:" + ExecutionNameFor(env.Detail.PedidoID, env.Detail.Intento), nil
		},
	}
}

// FromRuntime builds the starter's batch processor with real clients, as
// lambdas/iniciar-pedido's main does (Function): STATE_MACHINE_ARN,
// SIGNING_SECRET_ARN (the charge-signing key), IDEMPOTENCY_WINDOW
// (default and maximum eventsapi.StarterWindow) and the settings every
// consumer reads (sqsconsumer.Settings: DLQ_URLS, CONSUMER_VERSION,
// VISIBILITY_TIMEOUT, after a jitter of which a failed start comes back).
func FromRuntime(ctx context.Context, rt *sqsconsumer.Runtime) (*sqsbatch.Processor, error) {
	arn := rt.Env.Required(lambdaapi.EnvStateMachineARN)
	secretARN := rt.Env.Required(signing.EnvSecretARN)
	if err := rt.Env.Err(); err != nil {
		return nil, err
	}
	keys, err := signing.NewSecretSource(secretsmanager.NewFromConfig(rt.AWS), secretARN, nil)
	if err != nil {
		return nil, err
	}
	window := cmp.Or(rt.Settings.IdempotencyWindow, eventsapi.StarterWindow)
	s, err := New(sfn.NewFromConfig(rt.AWS), arn, rt.Log, WithWindow(window), WithVerifier(keys))
	if err != nil {
		return nil, err
	}
	cfg := BatchConfig(s)
	cfg.DLQ, cfg.Visibility, cfg.Logger = rt.SQS, rt.SQS, rt.Log
	return rt.Settings.Batch(cfg)
}

// Function builds the iniciar-pedido function's handler (its main; see
// FromRuntime).
func Function(ctx context.Context, env *lambdaenv.Env, _ *slog.Logger) (func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), error) {
	p, err := sqsconsumer.Start(ctx, "iniciar-pedido", env, FromRuntime)
	if err != nil {
		return nil, err
	}
	return p.Process, nil
}
