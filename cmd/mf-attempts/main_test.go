package main

import (
	"math"
	"strings"
	"testing"

	"github.com/mercadofresco/integration/constructs/guardrails"
)

func TestWriteTable(t *testing.T) {
	rows := []row{
		{"prod", "OrderFlow-prod", guardrails.AttemptPath{Dependency: "pasarela", Total: 12, Factors: []guardrails.Factor{{Layer: "state Cobrar: Retry MaxAttempts 3 + 1", N: 4}, {Layer: "function mf-cobro: GATEWAY_MAX_ATTEMPTS=3", N: 3}}}},
		{"dev", "Outbox-dev", guardrails.AttemptPath{Dependency: "sqs:x", Total: 186, Factors: []guardrails.Factor{{Layer: "rule r: 185 retries + 1", N: 186}}}},
		{"dev", "Outbox-dev", guardrails.AttemptPath{Dependency: "erp", Total: math.Inf(1), Exempt: "rate-limited by the ERP", Factors: []guardrails.Factor{{Layer: "stream", N: math.Inf(1)}}}},
	}
	var b strings.Builder
	if above := writeTable(&b, rows, false); above != 1 {
		t.Fatalf("above = %d, want 1 (the exempt path does not count)", above)
	}
	out := b.String()
	for _, want := range []string{
		"pasarela", "12", "state Cobrar: Retry MaxAttempts 3 + 1 (×4) → function mf-cobro: GATEWAY_MAX_ATTEMPTS=3 (×3)",
		"186", "OVER", "exempt: rate-limited by the ERP", "∞",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table misses %q:\n%s", want, out)
		}
	}
	b.Reset()
	writeTable(&b, rows, true)
	if strings.Contains(b.String(), "pasarela") || !strings.Contains(b.String(), "OVER") {
		t.Fatalf("-over prints only the paths above the limit:\n%s", b.String())
	}
}
