package lambdaenv

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

func TestValuesAndDefaults(t *testing.T) {
	e := FromMap(map[string]string{
		"NAME": " tabla ", "N": "7", "D": "30s", "B": "true",
		"U": "https://erp.example/api", "LOG_LEVEL": "warn", "M": "b",
	})
	if got := e.Required("NAME"); got != "tabla" {
		t.Errorf("Required = %q", got)
	}
	if got := e.String("MISSING", "def"); got != "def" {
		t.Errorf("String default = %q", got)
	}
	if got := e.Int("N", 1, 1, 10); got != 7 {
		t.Errorf("Int = %d", got)
	}
	if got := e.Duration("D", time.Second, 0, time.Minute); got != 30*time.Second {
		t.Errorf("Duration = %v", got)
	}
	if !e.Bool("B", false) || e.Bool("MISSING", false) {
		t.Error("Bool")
	}
	if u := e.URL("U", true); u == nil || u.Host != "erp.example" {
		t.Errorf("URL = %v", u)
	}
	if e.LogLevel() != slog.LevelWarn {
		t.Error("LogLevel")
	}
	if got := e.OneOf("M", "a", "a", "b"); got != "b" {
		t.Errorf("OneOf = %q", got)
	}
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	e := FromMap(map[string]string{
		"N": "x", "D": "5m", "B": "maybe", "U": "ftp://x", "LOG_LEVEL": "LOUD", "M": "z",
	})
	e.Required("NAME")
	e.Int("N", 1, 1, 10)
	e.Duration("D", 0, 0, time.Minute)
	e.Bool("B", false)
	e.URL("U", false)
	e.LogLevel()
	e.OneOf("M", "a", "a", "b")
	err := e.Err()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	for _, key := range []string{"NAME", "N:", "D:", "B:", "U:", "LOG_LEVEL", "M:"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not name %s: %v", key, err)
		}
	}
}

func TestLoadAWSConfigUsesAWSMaxAttempts(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	for _, tc := range []struct {
		env  string
		want int
	}{{"", lambdaapi.SDKMaxAttempts}, {"3", 3}} {
		cfg, err := FromMap(map[string]string{lambdaapi.EnvSDKMaxAttempts: tc.env}).LoadAWSConfig(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RetryMaxAttempts != tc.want {
			t.Errorf("AWS_MAX_ATTEMPTS=%q: RetryMaxAttempts = %d, want %d", tc.env, cfg.RetryMaxAttempts, tc.want)
		}
	}
	if _, err := FromMap(map[string]string{lambdaapi.EnvSDKMaxAttempts: "50"}).LoadAWSConfig(context.Background()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AWS_MAX_ATTEMPTS=50 accepted: %v", err)
	}
}
