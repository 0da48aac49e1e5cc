package lambdaapi

import (
	"errors"
	"testing"
)

func TestParseDLQRoutesAndFor(t *testing.T) {
	r, err := ParseDLQRoutes(`{"cola-mercadofresco-pedidos":"https://sqs.eu-west-1.amazonaws.com/333333333333/mercadofresco-pedidos-fallidos",
		"mercadofresco-movimientos-stock.fifo":"https://sqs.eu-west-1.amazonaws.com/333333333333/mercadofresco-movimientos-stock-fallidos.fifo"}`)
	if err != nil {
		t.Fatal(err)
	}
	for arn, want := range map[string]string{
		"arn:aws:sqs:eu-west-1:333333333333:cola-mercadofresco-pedidos":           "https://sqs.eu-west-1.amazonaws.com/333333333333/mercadofresco-pedidos-fallidos",
		"arn:aws:sqs:eu-west-1:333333333333:mercadofresco-movimientos-stock.fifo": "https://sqs.eu-west-1.amazonaws.com/333333333333/mercadofresco-movimientos-stock-fallidos.fifo",
	} {
		if got, ok := r.For(arn); !ok || got != want {
			t.Errorf("For(%s) = %q, %v", arn, got, ok)
		}
	}
	if _, ok := r.For("arn:aws:sqs:eu-west-1:333333333333:otra"); ok {
		t.Error("a queue without a route got one")
	}
}

func TestParseDLQRoutesRejectsBadRoutes(t *testing.T) {
	for _, s := range []string{`[1]`, `{"q":"arn:aws:sqs:eu-west-1:1:dlq"}`, `{"":"https://sqs.x/1/d"}`, `{"q":"https://sqs.x/d"}`} {
		if _, err := ParseDLQRoutes(s); !errors.Is(err, ErrInvalidDLQRoutes) {
			t.Errorf("ParseDLQRoutes(%s) = %v, want ErrInvalidDLQRoutes", s, err)
		}
	}
	if r, err := ParseDLQRoutes(" "); err != nil || len(r) != 0 {
		t.Errorf("empty = %v, %v", r, err)
	}
}
