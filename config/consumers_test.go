package config

import (
	"strings"
	"testing"
)

func TestConsumersOfEveryEnvironment(t *testing.T) {
	for _, name := range Names() {
		env, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		c := env.Consumers
		if c.AlmacenURL == "" || c.ERPURL == "" || c.CorreoSecundarioURL == "" || c.CorreoRemitente == "" {
			t.Errorf("%s: consumers' dependencies not configured: %+v", name, c)
		}
		if _, domain, ok := strings.Cut(c.CorreoRemitente, "@"); !ok || domain == "" {
			t.Errorf("%s: sender %q has no domain", name, c.CorreoRemitente)
		}
	}
}

func TestConsumersProblemsAreReported(t *testing.T) {
	env, _ := Lookup("dev")
	env.Consumers = Consumers{AlmacenURL: "http://almacen.example", ERPURL: "", CorreoSecundarioURL: "https://x.example",
		AlmacenMaxInFlight: 1, ERPMaxInFlight: 2.5, CorreoMaxInFlight: 4, CorreoRemitente: "Pedidos <pedidos@x.example>"}
	err := env.Validate()
	for _, want := range []string{"AlmacenURL", "ERPURL", "AlmacenMaxInFlight", "ERPMaxInFlight", "CorreoRemitente"} {
		if err == nil || !strings.Contains(err.Error(), "Consumers."+want) {
			t.Errorf("%s not reported: %v", want, err)
		}
	}
}
