package payment

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/httpdep"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/signing"
)

// Settings are the cobro and reembolso functions' environment, parsed: the
// gateway's httpdep variables (prefix lambdaapi.GatewayEnvPrefix) and the
// breaker's.
type Settings struct {
	Gateway          httpdep.Settings
	Breaker          breaker.Settings
	IdempotencyTable string
	Environment      string
}

// LoadSettings reads the variables named in lambdaapi,
// reporting every problem at once (through env.Err).
func LoadSettings(env *lambdaenv.Env) (Settings, error) {
	s := Settings{
		Gateway:          httpdep.LoadSettings(env, lambdaapi.GatewayEnvPrefix),
		IdempotencyTable: env.Required(lambdaapi.EnvIdempotencyTable),
		Environment:      env.Required(lambdaapi.EnvEnvironment),
	}
	var berr error
	s.Breaker, berr = breaker.LoadSettings(env)
	return s, errors.Join(env.Err(), berr)
}

// CobroFunction builds the cobro function's handler (its main; see
// TasksFromEnv).
// cobro also reads the signing key's secret (signing.EnvSecretARN) to
// verify every charge (WithVerifier).
func CobroFunction(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (func(context.Context, json.RawMessage) (lambdaapi.CobroOutput, error), error) {
	secretARN := env.Required(signing.EnvSecretARN)
	t, err := TasksFromEnv(ctx, env, log)
	if err != nil {
		return nil, err
	}
	awsCfg, err := env.LoadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := signing.NewSecretSource(secretsmanager.NewFromConfig(awsCfg), secretARN, nil)
	if err != nil {
		return nil, err
	}
	WithVerifier(keys)(t)
	return t.CobroHandler(), nil
}

// ReembolsoFunction builds the reembolso function's handler (its main).
func ReembolsoFunction(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (func(context.Context, json.RawMessage) (lambdaapi.ReembolsoOutput, error), error) {
	t, err := TasksFromEnv(ctx, env, log)
	if err != nil {
		return nil, err
	}
	return t.ReembolsoHandler(), nil
}

// TasksFromEnv builds the tasks with real clients, as the cobro and
// reembolso mains do: the AWS SDK configuration (lambdaenv), the
// idempotency table and the call budget on it, the API key secret, the
// gateway's breaker on Valkey, one retry budget for the gateway, and EMF
// metrics on stdout, logging to log.
func TasksFromEnv(ctx context.Context, env *lambdaenv.Env, log *slog.Logger) (*Tasks, error) {
	s, err := LoadSettings(env)
	if err != nil {
		return nil, err
	}
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
	cache := s.Breaker.Open(awsCfg, s.Environment, log)
	cfg, err := s.Gateway.Config(awsCfg, cache, httpdep.Config{Name: lambdaapi.GatewayDependency, Calls: calls, Logger: log})
	if err != nil {
		return nil, err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return NewTasks(store, c, log)
}
