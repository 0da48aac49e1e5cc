package main

import (
	"slices"
	"testing"
)

// TestOnceForAllEnvironments: an error that differs only in the
// environment's suffix is printed once with the environments it occurs
// in; one of a single environment keeps its names.
func TestOnceForAllEnvironments(t *testing.T) {
	msg := func(suffix string) string {
		return "[MercadoFresco-Messaging" + suffix + "] x: [MF-SQS-VISIBILITY] MercadoFresco-Messaging" + suffix + "/Preparacion: queue cola-mercadofresco-pedidos" + suffix + " has VisibilityTimeout 120 s; to fix, change PreparacionVisibility in constructs/queues (VisibilityTimeout)"
	}
	errs := []synthError{
		{"dev", msg("-dev")}, {"staging", msg("-staging")}, {"prod", msg("-prod")},
		{"staging", "[MercadoFresco-Data-staging] y: only here, table mercadofresco-idempotencia-staging"},
	}
	got := onceForAllEnvironments(errs, []string{"dev", "staging", "prod"})
	want := []string{
		"[MercadoFresco-Messaging] x: [MF-SQS-VISIBILITY] MercadoFresco-Messaging/Preparacion: queue cola-mercadofresco-pedidos has VisibilityTimeout 120 s; to fix, change PreparacionVisibility in constructs/queues (VisibilityTimeout) (in dev, staging, prod)",
		"[MercadoFresco-Data-staging] y: only here, table mercadofresco-idempotencia-staging",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}
