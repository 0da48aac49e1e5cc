package dlq_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/internal/testseed"
)

func TestGenerateIsReproducible(t *testing.T) {
	end := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	seed := testseed.New(t).Seed
	for _, s := range scenarios {
		a, err := generate(s, seed, end, prodSource)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := generate(s, seed, end, prodSource)
		c, _ := generate(s, seed+1, end, prodSource)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: same seed, different data", s)
		}
		if reflect.DeepEqual(a, c) {
			t.Errorf("%s: different seeds, same data", s)
		}
		for _, m := range a {
			if ms := m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)]; ms == "" || time.UnixMilli(mustInt(t, ms)).After(end) {
				t.Fatalf("%s: message sent at %s, after the end", s, ms)
			}
		}
	}
	if _, err := generate("nope", 1, end, prodSource); err == nil {
		t.Error("unknown scenario accepted")
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}

var update = flag.Bool("update", false, "rewrite cmd/mf-dlq/scenarios from the generator")

// TestScenarioFiles: the rehearsal sandbox's data sets (cmd/mf-dlq/scenarios)
// are the generator's, seed 20261129, ending 2026-11-30 07:00 UTC, redriven
// from dev's order queue; go test -run TestScenarioFiles -update rewrites them.
func TestScenarioFiles(t *testing.T) {
	for _, s := range scenarios {
		msgs, err := generate(s, 20261129, time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), "arn:aws:sqs:eu-west-1:000000000000:cola-mercadofresco-pedidos-dev")
		var want bytes.Buffer
		if err != nil || dlq.WriteMessages(&want, msgs) != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "scenarios", s+".jsonl")
		if *update {
			if err := os.WriteFile(path, want.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s is not the generator's (%v): go test ./cmd/mf-dlq/dlq -run TestScenarioFiles -update", path, err)
		}
	}
}
