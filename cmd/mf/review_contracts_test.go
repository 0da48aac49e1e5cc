package main

import (
	"slices"
	"testing"

	"github.com/mercadofresco/integration/synthesized"
)

func TestDeployOrderPutsDependenciesFirst(t *testing.T) {
	app := synthesized.New("p", "123456789012", "eu-west-1")
	for stack, deps := range map[string][]string{
		"P-Outbox":    {"P-Platform", "P-OrderFlow"},
		"P-OrderFlow": {"P-Messaging", "P-Platform"},
		"P-Messaging": {"P-Platform"},
		"P-Platform":  nil,
	} {
		if err := app.Add(stack, []byte(`{"Resources": {}}`)); err != nil {
			t.Fatal(err)
		}
		app.Stacks[stack].DependsOn = deps
	}
	got, err := deployOrder(app)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"P-Platform", "P-Messaging", "P-OrderFlow", "P-Outbox"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
