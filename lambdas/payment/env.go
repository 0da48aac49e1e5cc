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

	"github.com/mercadofresco/integration/lambdas/apikey"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/payment/paymentapi"
)

// Settings are the cobro and reembolso functions' environment, parsed: the
// gateway's httpdep variables (prefix paymentapi.GatewayEnvPrefix) and the
// breaker's.
type Settings struct {
	Gateway          httpdep.Settings
	Breaker          breaker.Settings
	IdempotencyTable string
	Environment      string
}

// LoadSettings reads the variables named in paymentapi and breakerapi,
// reporting every problem at once (through env.Err).
func LoadSettings(env *lambdaenv.Env) (Settings, error) {
	s := Settings{
		Gateway:          httpdep.LoadSettings(env, paymentapi.GatewayEnvPrefix),
		IdempotencyTable: env.Required(paymentapi.EnvIdempotencyTable),
		Environment:      env.Required(paymentapi.EnvEnvironment),
	}
	var berr error
	s.Breaker, berr = breaker.LoadSettings(env)
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
// reembolso mains do: the AWS SDK configuration (lambdaenv), the
// idempotency table and the call budget on it, the API key secret, the
// gateway's breaker on Valkey, one retry budget for the gateway, and EMF
// metrics on stdout. function names the logger.
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
	br, err := breaker.New(breaker.NewRedisStore(breaker.NewRedisClient(s.Breaker.RedisAddr, s.Breaker.RedisTLS)), breaker.Config{
		Name:             paymentapi.GatewayDependency,
		FailureThreshold: s.Breaker.FailureThreshold,
		OpenPeriod:       s.Breaker.OpenPeriod,
		ProbeLease:       s.Gateway.ReadTimeout + 15*time.Second,
		Metrics:          emf,
		Logger:           log,
	})
	if err != nil {
		return nil, err
	}
	dep, err := httpdep.FromSettings(s.Gateway, gatewayConfig(httpdep.Config{
		Keys:    apikey.NewSecret(secretsmanager.NewFromConfig(awsCfg), s.Gateway.SecretARN, 0),
		Breaker: br,
		Calls:   calls,
		Metrics: emf,
		Logger:  log,
	}))
	if err != nil {
		return nil, err
	}
	return NewTasks(store, newClient(dep, emf), log)
}
