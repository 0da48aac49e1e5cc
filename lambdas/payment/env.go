package payment

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/payment/paymentapi"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Settings are the cobro and reembolso functions' environment, parsed.
type Settings struct {
	GatewayURL       string
	GatewaySecretARN string
	Policy           retry.Policy
	ReadTimeout      time.Duration
	IdempotencyTable string
	Environment      string
	RedisAddr        string
	RedisTLS         bool
	FailureThreshold int
	OpenPeriod       time.Duration
}

// LoadSettings reads the variables named in paymentapi and breakerapi,
// reporting every problem at once (through env.Err).
func LoadSettings(env *lambdaenv.Env) (Settings, error) {
	s := Settings{
		GatewaySecretARN: env.Required(paymentapi.EnvGatewaySecretARN),
		Policy:           retry.PolicyFromEnv(env, "GATEWAY"),
		ReadTimeout:      env.Duration(paymentapi.EnvGatewayReadTimeout, DefaultReadTimeout, time.Second, 2*time.Minute),
		IdempotencyTable: env.Required(paymentapi.EnvIdempotencyTable),
		Environment:      env.Required(paymentapi.EnvEnvironment),
	}
	if u := env.URL(paymentapi.EnvGatewayURL, true); u != nil {
		s.GatewayURL = u.String()
	}
	bs, berr := breaker.LoadSettings(env)
	s.RedisAddr, s.RedisTLS, s.FailureThreshold, s.OpenPeriod = bs.RedisAddr, bs.RedisTLS, bs.FailureThreshold, bs.OpenPeriod
	return s, errors.Join(env.Err(), berr)
}

// Main is the whole main of the cobro and reembolso functions (function is
// "cobro" or "reembolso"): it builds the tasks from the environment with
// real clients and starts the Lambda runtime with the function's handler.
// A configuration problem ends the process (Lambda reports the init error).
func Main(function string) {
	tasks, err := TasksFromEnv(context.Background(), lambdaenv.New(os.Getenv), function)
	if err != nil {
		slog.Error(function+": cannot start", slog.String("error", err.Error()))
		os.Exit(1)
	}
	switch function {
	case "cobro":
		lambda.Start(tasks.CobroHandler())
	case "reembolso":
		lambda.Start(tasks.ReembolsoHandler())
	default:
		slog.Error("payment.Main: unknown function", slog.String("function", function))
		os.Exit(1)
	}
}

// TasksFromEnv builds the tasks with real clients, as the cobro and
// reembolso mains do: the AWS SDK configuration with AWS_MAX_ATTEMPTS
// (lambdaenv), the idempotency table, the API key secret, the gateway's
// breaker on Valkey (TLS, short timeouts, no go-redis retries: the breaker
// fails open instead), one retry budget for the gateway, and EMF metrics on
// stdout. function names the logger.
func TasksFromEnv(ctx context.Context, env *lambdaenv.Env, function string) (*Tasks, error) {
	s, err := LoadSettings(env)
	if err != nil {
		return nil, err
	}
	log := env.Logger(function)
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	ddb := dynamodb.NewFromConfig(awsCfg)
	store, err := idempotency.NewStore(ddb, idempotency.Config{TableName: s.IdempotencyTable})
	if err != nil {
		return nil, err
	}
	calls, err := NewCallBudget(ddb, s.IdempotencyTable)
	if err != nil {
		return nil, err
	}
	emf := breaker.MetricsWriter(os.Stdout, s.Environment, paymentapi.GatewayDependency)
	br, err := breaker.New(breaker.NewRedisStore(breaker.NewRedisClient(s.RedisAddr, s.RedisTLS)), breaker.Config{
		Name:             paymentapi.GatewayDependency,
		FailureThreshold: s.FailureThreshold,
		OpenPeriod:       s.OpenPeriod,
		ProbeLease:       s.ReadTimeout + 15*time.Second,
		Metrics:          emf,
		Logger:           log,
	})
	if err != nil {
		return nil, err
	}
	budget, err := retry.NewBudget(retry.BudgetConfig{})
	if err != nil {
		return nil, err
	}
	r, err := retry.New(s.Policy, retry.WithBudget(budget), retry.WithObserver(func(ev retry.RetryEvent) {
		log.Info("gateway retry", slog.Int("attempt", ev.Attempt), slog.Duration("wait", ev.Wait),
			slog.String("class", ev.Class.String()), slog.String("error", ev.Err.Error()))
	}))
	if err != nil {
		return nil, err
	}
	client, err := NewClient(Config{
		BaseURL:     s.GatewayURL,
		Keys:        NewSecretKey(secretsmanager.NewFromConfig(awsCfg), s.GatewaySecretARN, 0),
		Retrier:     r,
		Breaker:     br,
		Calls:       calls,
		ReadTimeout: s.ReadTimeout,
		Metrics:     emf,
		Logger:      log,
	})
	if err != nil {
		return nil, err
	}
	return NewTasks(store, client, log)
}
