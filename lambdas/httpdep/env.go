package httpdep

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// Settings are one dependency's variables (lambdaapi suffixes after a
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
		SecretARN:   env.Required(prefix + lambdaapi.EnvSuffixSecretARN),
		ReadTimeout: env.Duration(prefix+lambdaapi.EnvSuffixReadTimeout, lambdaapi.DefaultReadTimeout, time.Second, 2*time.Minute),
		Policy:      retry.PolicyFromEnv(env, prefix),
	}
	if u := env.URL(prefix+lambdaapi.EnvSuffixURL, true); u != nil {
		s.URL = u.String()
	}
	return s
}

// FromSettings builds the client cfg describes with s's URL and read
// timeout and a Retrier with s.Policy, a retry budget of its own (one per
// dependency per process, shared by every call) and its retries logged.
func FromSettings(s Settings, cfg Config) (*Client, error) {
	budget, err := retry.NewBudget(retry.BudgetConfig{})
	if err != nil {
		return nil, err
	}
	log := cmp.Or(cfg.Logger, slog.Default())
	r, err := retry.New(s.Policy, retry.WithBudget(budget), retry.WithObserver(func(ev retry.RetryEvent) {
		log.Info("retry", slog.String("dependency", cfg.Name), slog.Int("attempt", ev.Attempt), slog.Duration("wait", ev.Wait),
			slog.String("class", ev.Class.String()), slog.String("error", ev.Err.Error()))
	}))
	if err != nil {
		return nil, err
	}
	cfg.BaseURL, cfg.ReadTimeout, cfg.Retrier, cfg.Logger = s.URL, s.ReadTimeout, r, log
	return New(cfg)
}
