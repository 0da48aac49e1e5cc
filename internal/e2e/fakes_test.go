package e2e

import (
	"encoding/json"
	"fmt"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"reflect"
	"strings"
	"sync/atomic"
)

// Dependencies are the fake external services, each a localaws.Service
// (Idempotency-Key semantics with a finite retention, or none at all when
// the run ignores keys; fault injection; a ledger of requests and effects)
// speaking the API the project's clients call.
type Dependencies struct {
	Gateway    *lambdatest.Gateway
	Almacen    *localaws.Service // warehouse: POST /v1/preparaciones
	ERP        *localaws.Service // ERP: POST /v1/avisos-pedido (aviso-erp consumer)
	ERPWebhook *Webhook          // ERP webhook of the API destination
	Correo2    *localaws.Service // secondary e-mail provider: POST /v1/correos
	SES        *localaws.SES     // SES v2 SendEmail

	// afterPreparation, when set, runs after the warehouse prepared an
	// order (the effect is stored under its key) and before it answers.
	afterPreparation atomic.Pointer[func(pedidoID string)]
}

// newDependencies starts the fakes with their API keys (the values of the
// secrets the functions read, and the API destination connection's key of
// the ERP webhook); opts (the key store's mode and clock) apply to every
// localaws.Service.
func newDependencies(keys map[string]string, webhookKey, sesConfigSet string, opts ...localaws.ServiceOption) *Dependencies {
	d := &Dependencies{}
	with := func(o ...localaws.ServiceOption) []localaws.ServiceOption { return append(o, opts...) }
	d.Gateway = lambdatest.NewGateway(keys["GATEWAY"], opts...)
	d.Almacen = thirdParty("/v1/preparaciones", 201, []string{"pedido_id", "lineas"}, func(n int64, pedido string) string {
		if f := d.afterPreparation.Load(); f != nil {
			(*f)(pedido)
		}
		return fmt.Sprintf(`{"id":"prep-%d","pedido_id":%q,"estado":"EN_PREPARACION"}`, n, pedido)
	}, with(localaws.WithBearer(keys["ALMACEN"]))...)
	d.ERP = thirdParty("/v1/avisos-pedido", 201, []string{"pedido_id", "referencia_cobro"}, func(n int64, _ string) string {
		return fmt.Sprintf(`{"id":"aviso-%d"}`, n)
	}, with(localaws.WithBearer(keys["ERP"]))...)
	d.ERPWebhook = newWebhook(webhookKey)
	d.Correo2 = thirdParty("/v1/correos", 202, []string{"para", "asunto"}, func(n int64, _ string) string {
		return fmt.Sprintf(`{"id":"correo-%d"}`, n)
	}, with(localaws.WithBearer(keys["CORREO_SECUNDARIO"]))...)
	d.SES = localaws.NewSES(sesConfigSet, opts...)
	return d
}

// thirdParty is a fake HTTP service taking POST path with the required
// JSON fields present and not empty: its effect answers status with
// answer's body (n counts the effects, pedido is the body's pedido_id).
func thirdParty(path string, status int, required []string, answer func(n int64, pedido string) string, opts ...localaws.ServiceOption) *localaws.Service {
	var n atomic.Int64
	return localaws.NewService(func(r localaws.ServiceRequest) localaws.ServiceResponse {
		var in map[string]any
		ok := r.Method == "POST" && r.Path == path && json.Unmarshal(r.Body, &in) == nil
		for _, k := range required {
			ok = ok && in[k] != nil && in[k] != "" && !reflect.DeepEqual(in[k], []any{})
		}
		if !ok {
			return localaws.JSON(400, `{"codigo":"solicitud_invalida","mensaje":"bad request"}`)
		}
		return localaws.JSON(status, answer(n.Add(1), pedidoOf(r.Body)))
	}, opts...)
}

// Close stops every fake.
func (d *Dependencies) Close() {
	d.Gateway.Close()
	d.ERPWebhook.Close()
	d.SES.Close()
	for _, s := range []*localaws.Service{d.Almacen, d.ERP, d.Correo2} {
		s.Close()
	}
}

// pedidoOf reads pedido_id from a JSON body.
func pedidoOf(body []byte) string {
	var v struct {
		PedidoID string `json:"pedido_id"`
	}
	_ = json.Unmarshal(body, &v)
	return v.PedidoID
}

// Webhook is the ERP's webhook for the order events of the API destination:
// a Service that authenticates the connection's API key and performs every
// request, without a key store: a receiver de-duplicates by the
// Idempotency-Key header (the event id) and acknowledges a duplicate with
// 200 (the Stripe-like 409 for a key in flight would send an at-least-once
// duplicate to the rule's DLQ).
type Webhook struct{ *localaws.Service }

func newWebhook(key string) *Webhook {
	return &Webhook{localaws.NewService(func(r localaws.ServiceRequest) localaws.ServiceResponse {
		var in struct {
			PedidoID string `json:"pedido_id"`
			IDEvento string `json:"id_evento"`
			Tipo     string `json:"tipo"`
		}
		if r.Method != "POST" || json.Unmarshal(r.Body, &in) != nil || in.PedidoID == "" || in.IDEvento == "" || r.IdempotencyKey != in.IDEvento || !strings.HasPrefix(in.Tipo, "Pedido") {
			return localaws.JSON(400, `{"error":"bad request"}`)
		}
		return localaws.JSON(200, `{"recibido":true}`)
	}, localaws.WithoutIdempotency(), localaws.WithPrecheck(func(r localaws.ServiceRequest) *localaws.ServiceResponse {
		if r.Header.Get("x-api-key") == key {
			return nil
		}
		resp := localaws.JSON(401, `{"error":"bad API key"}`)
		return &resp
	}))}
}

// Events returns the distinct events received (event id -> order) and the
// number of deliveries.
func (h *Webhook) Events() (map[string]string, int) {
	out, n := map[string]string{}, 0
	for _, e := range h.Effects() {
		if e.Response.Status == 200 {
			n++
			if _, dup := out[e.IdempotencyKey]; !dup {
				out[e.IdempotencyKey] = pedidoOf(e.Body)
			}
		}
	}
	return out, n
}
