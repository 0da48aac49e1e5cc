package catalog_test

import (
	"testing"

	"github.com/mercadofresco/integration/config/catalog"
)

func TestPhysicalName(t *testing.T) {
	tests := []struct{ base, env, want string }{
		{catalog.PedidosQueueName, "prod", "cola-mercadofresco-pedidos"},
		{catalog.PedidosQueueName, "dev", "cola-mercadofresco-pedidos-dev"},
		{catalog.StockMovementsDLQName, "staging", "mercadofresco-movimientos-stock-fallidos-staging.fifo"},
	}
	for _, tt := range tests {
		if got := catalog.PhysicalName(tt.base, tt.env); got != tt.want {
			t.Errorf("PhysicalName(%q, %q) = %q, want %q", tt.base, tt.env, got, tt.want)
		}
	}
	for _, env := range []string{"", "Dev", "-dev", "qa"} {
		if catalog.ValidEnvironment(env) == nil {
			t.Errorf("ValidEnvironment(%q) accepted", env)
		}
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
		{name: "cola-mercadofresco-pedidos-qa", physical: true},
		{name: "mercadofresco-movimientos-stock-dev", physical: true},
	}
	for _, tt := range tests {
		var q catalog.Queue
		var dlq, ok bool
		env := ""
		if tt.physical {
			q, env, dlq, ok = catalog.FindPhysical(tt.name)
		} else {
			q, dlq, ok = catalog.Find(tt.name)
		}
		if ok != tt.ok || q.Logical != tt.want || dlq != tt.dlq || env != tt.env {
			t.Errorf("%s: got %q env=%q dlq=%v ok=%v", tt.name, q.Logical, env, dlq, ok)
		}
	}
}
