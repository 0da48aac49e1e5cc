package httpdep_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mercadofresco/integration/lambdas/httpdep"
)

type fakeSM struct {
	mu    sync.Mutex
	value string
	err   error
	reads int
}

func (f *fakeSM) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(f.value)}, nil
}

func TestSecretShapes(t *testing.T) {
	for _, tc := range []struct{ value, want, err string }{
		{value: "k-123", want: "k-123"},
		{value: "  k-123\n", want: "k-123"},
		{value: `{"api_key":"k-json"}`, want: "k-json"},
		{value: `{"otra":"x"}`, err: "empty API key"},
		{value: "", err: "empty API key"},
		{value: `{"api_key":`, err: "JSON secret"},
	} {
		sm := &fakeSM{value: tc.value}
		got, err := httpdep.NewSecretKey(sm, "almacen", 0).APIKey(context.Background())
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q %v", tc.value, got, err)
		}
	}
}

func TestSecretCachesAndRefreshes(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	sm := &fakeSM{value: "v1"}
	s := httpdep.NewSecretKey(sm, "erp", time.Hour).WithClock(func() time.Time { return now })
	ctx := context.Background()
	for range 3 {
		if k, err := s.APIKey(ctx); err != nil || k != "v1" {
			t.Fatal(k, err)
		}
	}
	if sm.reads != 1 {
		t.Fatalf("%d reads for three keys, want 1", sm.reads)
	}
	sm.value = "v2"
	if k, _ := s.Refresh(ctx); k != "v1" || sm.reads != 1 {
		t.Fatalf("a refresh right after a read read again (%q, %d reads)", k, sm.reads)
	}
	now = now.Add(2 * time.Second)
	if k, _ := s.Refresh(ctx); k != "v2" || sm.reads != 2 {
		t.Fatalf("refresh: %q after %d reads", k, sm.reads)
	}
	now = now.Add(2 * time.Hour)
	sm.value = "v3"
	if k, _ := s.APIKey(ctx); k != "v3" {
		t.Fatalf("after the TTL: %q", k)
	}
	sm.err = errors.New("throttled")
	now = now.Add(2 * time.Hour)
	if _, err := s.APIKey(ctx); err == nil || !strings.Contains(err.Error(), "erp") {
		t.Fatalf("a failed read: %v", err)
	}
}
