package httpdep

import (
	"log/slog"
	"time"

	"github.com/mercadofresco/integration/lambdas/apikey"
	"github.com/mercadofresco/integration/lambdas/breaker"
	"github.com/mercadofresco/integration/lambdas/httpdep/httpdepapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Settings are one dependency's variables (httpdepapi suffixes after a
// prefix such as "ALMACEN").
type Settings struct {
	URL         string
	SecretARN   string
	ReadTimeout time.Duration
	Policy      retry.Policy
}

// LoadSettings reads the dependency's variables; problems are recorded in
// env (report them with env.Err).
func LoadSettings(env *lambdaenv.Env, prefix string) Settings {
	s := Settings{
		SecretARN:   env.Required(prefix + httpdepapi.EnvSuffixSecretARN),
		ReadTimeout: env.Duration(prefix+httpdepapi.EnvSuffixReadTimeout, DefaultReadTimeout, time.Second, 2*time.Minute),
		Policy:      retry.PolicyFromEnv(env, prefix),
	}
	if u := env.URL(prefix+httpdepapi.EnvSuffixURL, true); u != nil {
		s.URL = u.String()
	}
	return s
}

// FromSettings builds the client of dependency name: a retry budget of its
// own (one per dependency per process, shared by every call), a Retrier
// with s.Policy whose retries are logged, and the given key source,
// breaker, metrics and logger.
func FromSettings(s Settings, name string, keys apikey.Source, br *breaker.Breaker, m metrics.Emitter, log *slog.Logger) (*Client, error) {
	budget, err := retry.NewBudget(retry.BudgetConfig{})
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	r, err := retry.New(s.Policy, retry.WithBudget(budget), retry.WithObserver(func(ev retry.RetryEvent) {
		log.Info("retry", slog.String("dependency", name), slog.Int("attempt", ev.Attempt), slog.Duration("wait", ev.Wait),
			slog.String("class", ev.Class.String()), slog.String("error", ev.Err.Error()))
	}))
	if err != nil {
		return nil, err
	}
	return New(Config{Name: name, BaseURL: s.URL, Keys: keys, Retrier: r, Breaker: br, ReadTimeout: s.ReadTimeout, Metrics: m, Logger: log})
}
