package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mercadofresco/integration/checks"
)

// The committed prod templates: every call listed as reachable, in lines of
// at most 160 columns.
func TestListsEveryCallOfTheCommittedTemplates(t *testing.T) {
	var out, errs strings.Builder
	if code := runReach([]string{"-e", "prod", "-dir", "../../test/testdata/snapshots"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs.String(), out.String())
	}
	for _, want := range []string{
		"mf-cobro", "api.pasarela.mercadofresco.example:443", "secretsmanager", "interface endpoint RedVpcSecretsManager",
		"mf-outbox-publicador", "events", "gateway endpoint RedVpcDynamoDB", "NAT gateway", "mf-iniciar-pedido", "outside the VPC",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table misses %q:\n%s", want, out.String())
		}
	}
	checkWidth(t, out.String())
	if strings.Contains(out.String(), "MISSING") {
		t.Errorf("the committed templates have an unreachable call:\n%s", out.String())
	}
}

func TestMarksAndExplainsAnUnreachableCall(t *testing.T) {
	rows := []reachRow{
		{"prod", checks.Call{Function: "mf-cobro", Path: "OrderFlow/Pago/Cobro/Function/Resource", Target: "secretsmanager", Via: "interface endpoint E",
			Missing: checks.HopIngress, Detail: strings.Repeat("a long explanation of the missing hop ", 10)}},
		{"prod", checks.Call{Function: "mf-cobro", Path: "p", Target: "dynamodb", Via: "gateway endpoint G"}},
	}
	var b strings.Builder
	if n := writeReach(&b, rows); n != 1 {
		t.Fatalf("unreachable = %d, want 1", n)
	}
	for _, want := range []string{"MISSING", `missing hop "` + checks.HopIngress + `"`, "reachable", "[MF-REACH]", "cannot reach secretsmanager"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output misses %q:\n%s", want, b.String())
		}
	}
	checkWidth(t, b.String())
}

func checkWidth(t *testing.T, s string) {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if n := utf8.RuneCountInString(l); n > maxWidth {
			t.Errorf("line of %d columns (> %d): %s", n, maxWidth, l)
		}
	}
}
