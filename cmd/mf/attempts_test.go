package main

import (
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mercadofresco/integration/checks"
)

func TestWriteTable(t *testing.T) {
	rows := []attemptRow{
		{"prod", "OrderFlow-prod", checks.AttemptPath{Dependency: "pasarela", Total: 12, Factors: []checks.Factor{{Layer: "state Cobrar: Retry MaxAttempts 3 + 1", N: 4}, {Layer: "function mf-cobro: GATEWAY_MAX_ATTEMPTS=3", N: 3}}}},
		{"dev", "Outbox-dev", checks.AttemptPath{Dependency: "sqs:x", Total: 186, Factors: []checks.Factor{{Layer: "rule r: 185 retries + 1", N: 186}}}},
		{"dev", "Outbox-dev", checks.AttemptPath{Dependency: "erp", Total: math.Inf(1), Exempt: "rate-limited by the ERP", Factors: []checks.Factor{{Layer: "stream", N: math.Inf(1)}}}},
		{"dev", "Flow-dev", checks.AttemptPath{Dependency: "every task of flujo", Total: math.Inf(1), Unreadable: "Fn::Sub with a variable map", Factors: []checks.Factor{{Layer: "state machine flujo: unreadable", N: math.Inf(1)}}}},
		{"dev", "Flow-dev", checks.AttemptPath{Dependency: "largo", Total: 2, Factors: []checks.Factor{{Layer: strings.Repeat("capa muy larga ", 30), N: 2}}}},
	}
	var b strings.Builder
	if above := writeAttempts(&b, rows, false); above != 2 {
		t.Fatalf("above = %d, want 2 (the OVER and the UNREADABLE paths; the exempt one does not count)", above)
	}
	out := b.String()
	for _, want := range []string{
		"pasarela", "12", "state Cobrar: Retry MaxAttempts 3 + 1 (×4) → function mf-cobro: GATEWAY_MAX_ATTEMPTS=3 (×3)",
		"186", "OVER", "UNREADABLE", "why: Fn::Sub with a variable map", "exempt (acknowledged)", "why: rate-limited by the ERP", "∞",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table misses %q:\n%s", want, out)
		}
	}
	// Sorted by headroom: the unbounded and the 186 first, the 2 last.
	if strings.Index(out, "sqs:x") > strings.Index(out, "pasarela") || strings.Index(out, "pasarela") > strings.Index(out, "largo") {
		t.Errorf("rows are not sorted by headroom:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > maxWidth {
			t.Errorf("line of %d columns: %s", utf8.RuneCountInString(l), l)
		}
	}
	b.Reset()
	writeAttempts(&b, rows, true)
	if strings.Contains(b.String(), "pasarela") || !strings.Contains(b.String(), "OVER") {
		t.Fatalf("-over prints only the paths above the limit:\n%s", b.String())
	}
}

// logicalID matches a CloudFormation logical id the CDK generates (a
// name followed by an 8-digit hex hash).
var logicalID = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*[0-9A-F]{8}\b`)

// The real app, from `mf attempts`' own output: the gateway's worst case is
// 12 (Cobrar's 4 attempts × the client's 3), every line fits in 160
// columns and names resources, not logical ids or intrinsic functions, and
// docs/design.md's table is this command's output.
func TestProdTableOfTheApp(t *testing.T) {
	apps, err := load("prod", "")
	if err != nil {
		t.Fatal(err)
	}
	rows := collect(apps)
	var b strings.Builder
	if above := writeAttempts(&b, rows, false); above != 0 {
		t.Fatalf("%d path(s) above the limit or unreadable:\n%s", above, b.String())
	}
	out := b.String()
	t.Logf("mf attempts -e prod:\n%s", out)
	gateway := regexp.MustCompile(`(?m)^prod +OrderFlow-prod +pasarela +12 +15 +3 +ok\n +path: state machine mercadofresco-procesar-pedido \(×1\) → state Cobrar: Retry MaxAttempts 3 \+ 1 \(×4\) → function mf-cobro: GATEWAY_MAX_ATTEMPTS=3 \(×3\)`)
	if !gateway.MatchString(out) {
		t.Errorf("the gateway's worst case is not 12 via Cobrar × GATEWAY_MAX_ATTEMPTS 3")
	}
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > maxWidth {
			t.Errorf("line of %d columns: %s", n, l)
		}
		if id := logicalID.FindString(l); id != "" {
			t.Errorf("logical id %s in: %s", id, l)
		}
		if strings.Contains(l, "Fn::") || strings.Contains(l, "{\"") || strings.Contains(l, "MercadoFresco-") {
			t.Errorf("raw intrinsic or construct path in: %s", l)
		}
	}
	var md strings.Builder
	writeMarkdown(&md, rows)
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- mf attempts -e prod -markdown -->\n", "<!-- end mf attempts -->"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("docs/design.md has no %q ... %q block", begin, end)
	}
	if got := string(doc)[i+len(begin) : j]; got != md.String() {
		t.Errorf("docs/design.md's attempts table differs from `go run ./cmd/mf attempts -e prod -markdown`; paste its output:\n%s", md.String())
	}
}
