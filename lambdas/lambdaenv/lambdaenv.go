// Package lambdaenv is how every Lambda main of the project reads its
// configuration: environment variables parsed into typed values, every
// problem collected (a typo must fail the first invocation with all of its
// mistakes listed, never silently fall back to a default), and the AWS SDK
// configuration loaded with the project's retry layer.
//
// Usage:
//
//	env := lambdaenv.New(os.Getenv)
//	table := env.Required("IDEMPOTENCY_TABLE_NAME")
//	conc := env.Int("BATCH_CONCURRENCY", 8, 1, 100)
//	if err := env.Err(); err != nil { ... }
package lambdaenv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// ErrInvalid is wrapped by every error Err reports.
var ErrInvalid = errors.New("lambdaenv: invalid environment")

// Env reads variables through a getenv function and accumulates problems.
// Not safe for concurrent use (mains read their settings once, at init).
type Env struct {
	getenv   func(string) string
	problems []string
}

// New returns an Env reading through getenv (os.Getenv in a main, a map's
// lookup in tests). A nil getenv means os.Getenv.
func New(getenv func(string) string) *Env {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Env{getenv: getenv}
}

// FromMap is an Env over a fixed map (tests).
func FromMap(m map[string]string) *Env {
	return New(func(k string) string { return m[k] })
}

func (e *Env) raw(key string) string { return strings.TrimSpace(e.getenv(key)) }

func (e *Env) fail(key, format string, a ...any) {
	e.problems = append(e.problems, key+": "+fmt.Sprintf(format, a...))
}

// Err reports every problem found so far (nil when none), wrapping ErrInvalid.
func (e *Env) Err() error {
	if len(e.problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(e.problems, "; "))
}

// Required returns the variable, recording a problem when it is empty.
func (e *Env) Required(key string) string {
	v := e.raw(key)
	if v == "" {
		e.fail(key, "required")
	}
	return v
}

// String returns the variable, or def when it is empty.
func (e *Env) String(key, def string) string { return cmp.Or(e.raw(key), def) }

// OneOf returns the variable (or def when empty) and records a problem when
// it is not one of allowed.
func (e *Env) OneOf(key, def string, allowed ...string) string {
	v := e.String(key, def)
	if !slices.Contains(allowed, v) {
		e.fail(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
		return def
	}
	return v
}

// parsed returns the variable as parse reads it, or def when it is empty;
// a value parse refuses is a problem (want says what it takes).
func parsed[T any](e *Env, key string, def T, want string, parse func(string) (T, bool)) T {
	v := e.raw(key)
	if v == "" {
		return def
	}
	x, ok := parse(v)
	if !ok {
		e.fail(key, "%q: want %s", v, want)
		return def
	}
	return x
}

// Int returns the variable as an integer in [min, max], or def when empty.
func (e *Env) Int(key string, def, min, max int) int {
	return parsed(e, key, def, fmt.Sprintf("an integer in %d..%d", min, max), func(v string) (int, bool) {
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= min && n <= max
	})
}

// Duration returns the variable as a Go duration ("30s", "2m") in
// [min, max], or def when empty.
func (e *Env) Duration(key string, def, min, max time.Duration) time.Duration {
	return parsed(e, key, def, fmt.Sprintf("a duration in %s..%s", min, max), func(v string) (time.Duration, bool) {
		d, err := time.ParseDuration(v)
		return d, err == nil && d >= min && d <= max
	})
}

// Bool returns the variable as a boolean (true/false/1/0), or def when empty.
func (e *Env) Bool(key string, def bool) bool {
	return parsed(e, key, def, "true or false", func(v string) (bool, bool) {
		b, err := strconv.ParseBool(v)
		return b, err == nil
	})
}

// URL returns the variable as an absolute http(s) URL. Empty is a problem when
// required, else returns nil.
func (e *Env) URL(key string, required bool) *url.URL {
	if required {
		e.Required(key)
	}
	return parsed(e, key, nil, "an absolute http(s) URL", func(v string) (*url.URL, bool) {
		u, err := url.Parse(v)
		return u, err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
	})
}

// LogLevel returns LOG_LEVEL (DEBUG, INFO, WARN, ERROR; default INFO).
func (e *Env) LogLevel() slog.Level {
	return parsed(e, "LOG_LEVEL", slog.LevelInfo, "DEBUG, INFO, WARN or ERROR", func(v string) (slog.Level, bool) {
		var l slog.Level
		return l, l.UnmarshalText([]byte(v)) == nil
	})
}

// Logger is the project's JSON logger on stdout at LOG_LEVEL, tagged with the
// function's name.
func (e *Env) Logger(function string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: e.LogLevel()})).
		With(slog.String("funcion", function))
}

// LoadAWSConfig loads the SDK configuration the usual way (region, role
// credentials, AWS_ENDPOINT_URL_* overrides) with SDKHTTPClient and
// lambdaapi.EnvSDKMaxAttempts attempts per call, lambdaapi.SDKMaxAttempts when
// it is unset (docs/design.md#retry-layers).
func (e *Env) LoadAWSConfig(ctx context.Context, opts ...func(*config.LoadOptions) error) (aws.Config, error) {
	attempts := e.Int(lambdaapi.EnvSDKMaxAttempts, lambdaapi.SDKMaxAttempts, 1, 10)
	if err := e.Err(); err != nil {
		return aws.Config{}, err
	}
	opts = append([]func(*config.LoadOptions) error{config.WithRetryMaxAttempts(attempts)}, opts...)
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("lambdaenv: load AWS config: %w", err)
	}
	cfg.HTTPClient = SDKHTTPClient(cfg.HTTPClient)
	return cfg, nil
}

// Main is the whole main of a deployed function: build makes the
// function's handler (a func lambda.Start accepts) from the process
// environment, and Lambda runs it. A problem ends the process with it
// logged, and Lambda reports the init error.
func Main[H any](function string, build func(ctx context.Context, env *Env, log *slog.Logger) (H, error)) {
	env := New(os.Getenv)
	log := env.Logger(function)
	h, err := build(context.Background(), env, log)
	if err != nil {
		log.Error(function+": cannot start", slog.String("error", err.Error()))
		os.Exit(1)
	}
	lambda.Start(h)
}
