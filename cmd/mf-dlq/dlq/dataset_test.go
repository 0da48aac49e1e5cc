package dlq_test

import (
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/internal/testseed"
)

func TestGenerateIsReproducible(t *testing.T) {
	end := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	seed := testseed.New(t).Seed
	for _, s := range dlq.Scenarios {
		a, err := dlq.Generate(s, seed, end, dlq.ProdSource)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := dlq.Generate(s, seed, end, dlq.ProdSource)
		c, _ := dlq.Generate(s, seed+1, end, dlq.ProdSource)
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
	if _, err := dlq.Generate("nope", 1, end, dlq.ProdSource); err == nil {
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
