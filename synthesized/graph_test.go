package synthesized

import (
	"strings"
	"testing"
)

func prod(t *testing.T) *App {
	t.Helper()
	app, err := LoadEnv(snapshots, "prod")
	if err != nil {
		t.Fatal(err)
	}
	return app
}

// The graph of the committed prod templates: one edge of each kind, with
// its ends, its dead-letter queue and its target as the template names it.
func TestEdgesOfTheApp(t *testing.T) {
	app := prod(t)
	const (
		flow = "MercadoFresco-OrderFlow-prod/"
		msg  = "MercadoFresco-Messaging-prod/"
		plat = "MercadoFresco-Platform-prod/"
		out  = "MercadoFresco-Outbox-prod/"
	)
	tests := []struct {
		kind                  Kind
		via, state            string
		from, to, dlq, target string
	}{
		{RuleTarget, flow + "Inicio/PedidoCreado/Rule/Resource", "", plat + "Bus/Resource", flow + "Inicio/Buffer/Queue/Resource",
			flow + "Inicio/PedidoCreado/DeadLetterQueue/Queue/Resource", "arn:aws:sqs:eu-west-1:333333333333:cola-mercadofresco-inicio-pedido"},
		{RuleTarget, flow + "ERP/Pedidos/Rule/Resource", "", plat + "Bus/Resource", flow + "ERP/Destino/ApiDestination",
			flow + "ERP/Pedidos/DeadLetterQueue/Queue/Resource", "arn:aws:events:eu-west-1:333333333333:api-destination/mf-erp-webhook"},
		{RuleTarget, msg + "Correo/ReglaEventos", "", "", msg + "Correo/RegistroEventos/Resource", msg + "Correo/EventosDLQ/Queue/Resource",
			"arn:aws:logs:eu-west-1:333333333333:log-group:/aws/events/mercadofresco-correo-ses"},
		{Subscription, msg + "PedidoConfirmado/Pedidos/Subscription/Resource", "", msg + "PedidoConfirmado/Topic/Resource",
			msg + "Preparacion/Consumidor/Cola/Queue/Resource", msg + "PedidoConfirmado/Pedidos/DeadLetterQueue/Queue/Resource",
			"arn:aws:sqs:eu-west-1:333333333333:cola-mercadofresco-pedidos"},
		{Subscription, plat + "Alerts/alertas@mercadofresco.example/Resource", "", plat + "Alerts/Resource", "", "", "alertas@mercadofresco.example"},
		{Mapping, msg + "Preparacion/Consumidor/Funcion/Function/SqsConsumerMercadoFrescoMessagingprodPreparacionConsumidorColaQueue1A28DDC9/Resource", "",
			msg + "Preparacion/Consumidor/Cola/Queue/Resource", msg + "Preparacion/Consumidor/Funcion/Function/Resource", "", "mf-preparar-pedido"},
		{Pipe, flow + "Carritos/Pipe", "", flow + "Carritos/Table/Resource", plat + "Bus/Resource", flow + "Carritos/PipeDLQ/Queue/Resource",
			"arn:aws:events:eu-west-1:333333333333:event-bus/bus-mercadofresco"},
		{Task, flow + "ProcesarPedido/StateMachine/Resource", "Cobrar", flow + "ProcesarPedido/StateMachine/Resource", flow + "Pago/Cobro/Function/Resource", "",
			"arn:aws:lambda:eu-west-1:333333333333:function:mf-cobro"},
		{Task, flow + "ProcesarPedido/StateMachine/Resource", "Confirmar", flow + "ProcesarPedido/StateMachine/Resource", msg + "PedidoConfirmado/Topic/Resource", "",
			"arn:aws:sns:eu-west-1:333333333333:mercadofresco-pedido-confirmado"},
		{Task, flow + "ProcesarPedido/StateMachine/Resource", "EnviarReservas", flow + "ProcesarPedido/StateMachine/Resource", msg + "MovimientosStock/Consumidor/Cola/Queue/Resource", "",
			"https://sqs.eu-west-1.amazonaws.com/333333333333/mercadofresco-movimientos-stock.fifo"},
		{ScheduleTarget, out + "Publicador/CadaMinuto/Resource", "", out + "Publicador/CadaMinuto/Resource", out + "Publicador/Publicador/Function/Resource", "",
			"arn:aws:lambda:eu-west-1:333333333333:function:mf-outbox-publicador"},
		{Connection, flow + "ERP/Destino/ApiDestination", "", flow + "ERP/Destino/ApiDestination", flow + "ERP/Conexion/Connection", "",
			"arn:aws:events:eu-west-1:333333333333:connection/mf-erp"},
		{DeadLetter, msg + "Preparacion/Consumidor/Cola/Queue/Resource", "", msg + "Preparacion/Consumidor/Cola/Queue/Resource",
			msg + "Preparacion/Consumidor/Cola/DeadLetterQueue/Resource", "", "arn:aws:sqs:eu-west-1:333333333333:mercadofresco-pedidos-fallidos"},
	}
	path := func(r *Resource) string {
		if r == nil {
			return ""
		}
		return r.Path()
	}
	for _, tc := range tests {
		var e *Edge
		for _, c := range app.Edges() {
			if c.Kind == tc.kind && c.Via.Path() == tc.via && c.State == tc.state {
				e = c
			}
		}
		if e == nil {
			t.Errorf("no %s edge via %s %s", tc.kind, tc.via, tc.state)
			continue
		}
		for _, c := range [][3]string{{"from", path(e.From), tc.from}, {"to", path(e.To), tc.to}, {"dlq", path(e.DLQ), tc.dlq}, {"target", e.Target, tc.target}} {
			if c[1] != c[2] {
				t.Errorf("%s edge via %s %s: %s %q, want %q", tc.kind, tc.via, tc.state, c[0], c[1], c[2])
			}
		}
		if e.To != nil && !contains(app.To(e.To, tc.kind), e) || !contains(app.Via(e.Via, tc.kind), e) || e.From != nil && !contains(app.From(e.From, ""), e) {
			t.Errorf("%s edge via %s: not indexed by its ends", tc.kind, tc.via)
		}
	}
}

func contains(es []*Edge, e *Edge) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// A state machine's definition is read with its references resolved, and
// a rule's pattern compiles with them resolved too.
func TestDefinitionAndPattern(t *testing.T) {
	app := prod(t)
	var sm, rule *Resource
	for _, r := range app.Resources("") {
		switch {
		case r.Type == "AWS::StepFunctions::StateMachine":
			sm = r
		case r.Type == "AWS::Events::Rule" && strings.HasSuffix(r.Path(), "Inicio/PedidoCreado/Rule/Resource"):
			rule = r
		}
	}
	def, err := app.Definition(sm)
	if err != nil {
		t.Fatal(err)
	}
	if got := Dig(def, "States", "Cobrar", "Resource"); got != "arn:aws:lambda:eu-west-1:333333333333:function:mf-cobro" {
		t.Errorf("Cobrar's function %v", got)
	}
	if _, err := app.Definition(rule); err == nil {
		t.Error("a rule has a definition")
	}
	p, err := app.Pattern(rule.Stack, rule.Prop("EventPattern"))
	if err != nil {
		t.Fatal(err)
	}
	for detailType, want := range map[string]bool{"PedidoCreado": true, "CarritoAbandonado": false} {
		event := map[string]any{"source": "mercadofresco.tienda", "detail-type": detailType, "detail": map[string]any{"version": 1.0}}
		if got := p.MatchValue(event); got != want {
			t.Errorf("%s matches %v, want %v (pattern %v)", detailType, got, want, rule.Prop("EventPattern"))
		}
	}
}
