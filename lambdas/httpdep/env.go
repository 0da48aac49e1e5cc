package httpdep

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/breaker"
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

// Config completes cfg as a main builds dependency cfg.Name: s's URL and
// read timeout; its API key from Secrets Manager (s.SecretARN, read with
// awsCfg); its breaker on cache (probe lease: the read timeout plus 15 s)
// and, unless cfg names a writer, its metrics beside the breaker's; a
// Retrier with s.Policy, the breaker's fleet-wide retry budget and its
// retries logged.
func (s Settings) Config(awsCfg aws.Config, cache *breaker.Cache, cfg Config) (Config, error) {
	br, err := cache.Breaker(cfg.Name, s.ReadTimeout+15*time.Second)
	if err != nil {
		return cfg, err
	}
	if cfg.Metrics == nil {
		cfg.Metrics = cache.Metrics(cfg.Name)
	}
	log := cmp.Or(cfg.Logger, slog.Default())
	r, err := retry.New(s.Policy, retry.WithBudget(br), retry.WithObserver(func(ev retry.RetryEvent) {
		log.Info("retry", slog.String("dependency", cfg.Name), slog.Int("attempt", ev.Attempt), slog.Duration("wait", ev.Wait),
			slog.String("class", ev.Class.String()), slog.String("error", ev.Err.Error()))
	}))
	cfg.BaseURL, cfg.ReadTimeout, cfg.Retrier, cfg.Logger, cfg.Breaker = s.URL, s.ReadTimeout, r, log, br
	cfg.Keys = NewSecretKey(secretsmanager.NewFromConfig(awsCfg), s.SecretARN, 0)
	return cfg, err
}
