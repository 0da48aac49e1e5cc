package queuenames_test

import (
	"testing"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/lambdas/queuenames"
)

// TestSuffixMatchesConfig keeps the stdlib-only rule equal to the CDK
// environments' NameSuffix and PhysicalName.
func TestSuffixMatchesConfig(t *testing.T) {
	envs, err := config.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != len(queuenames.Environments) {
		t.Fatalf("config has %d environments, queuenames %d", len(envs), len(queuenames.Environments))
	}
	for _, env := range envs {
		suffix, err := queuenames.Suffix(env.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queuenames.Queues {
			for _, base := range []string{q.Name, q.DLQName} {
				if got, want := queuenames.PhysicalName(base, suffix), env.PhysicalName(base); got != want {
					t.Errorf("%s %s: PhysicalName = %q, config says %q", env.Name, base, got, want)
				}
			}
		}
	}
	if _, err := queuenames.Suffix("qa"); err == nil {
		t.Error("Suffix(qa) must fail")
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name, want, env string
		dlq, ok         bool
		physical        bool
	}{
		{name: "pedidos", want: "Pedidos", ok: true},
		{name: "mercadofresco-pedidos-fallidos", want: "Pedidos", dlq: true, ok: true},
		{name: "cola-mercadofresco-aviso-erp", want: "AvisoERP", ok: true},
		{name: "nope"},
		{name: "mercadofresco-pedidos-fallidos-dev", want: "Pedidos", env: "dev", dlq: true, ok: true, physical: true},
		{name: "mercadofresco-movimientos-stock-fallidos-staging.fifo", want: "StockMovements", env: "staging", dlq: true, ok: true, physical: true},
		{name: "cola-mercadofresco-pedidos", want: "Pedidos", env: "prod", ok: true, physical: true},
	}
	for _, tt := range tests {
		var q queuenames.Queue
		var dlq, ok bool
		env := ""
		if tt.physical {
			q, env, dlq, ok = queuenames.FindPhysical(tt.name)
		} else {
			q, dlq, ok = queuenames.Find(tt.name)
		}
		if ok != tt.ok || q.Logical != tt.want || dlq != tt.dlq || env != tt.env {
			t.Errorf("%s: got %q env=%q dlq=%v ok=%v", tt.name, q.Logical, env, dlq, ok)
		}
	}
}
