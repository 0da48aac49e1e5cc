package sqsconsumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/confirmationmail"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
	"github.com/mercadofresco/integration/lambdas/stock"
)

// deployed is the environment the CDK gives every consumer (placeholders).
func deployed() map[string]string {
	return map[string]string{
		"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret",
		"ENTORNO": "dev", "MAX_RECEIVE_COUNT": "4", "CONSUMER_VERSION": "sha256:abc", "IDEMPOTENCY_WINDOW": "1080h",
		"DLQ_URLS":               `{"cola":"https://sqs.eu-west-1.amazonaws.com/111111111111/cola-fallidos"}`,
		"IDEMPOTENCY_TABLE_NAME": "mercadofresco-idempotencia-dev", "STOCK_TABLE_NAME": "mercadofresco-stock-dev",
		"BREAKER_REDIS_ADDR": "cache.example:6379",
		"ALMACEN_URL":        "https://almacen.example", "ALMACEN_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:111111111111:secret:almacen",
		"ERP_URL": "https://erp.example", "ERP_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:111111111111:secret:erp",
		"CORREO_SECUNDARIO_URL": "https://correo.example", "CORREO_SECUNDARIO_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:111111111111:secret:correo",
		"CORREO_REMITENTE": "pedidos@dev.mercadofresco.example", "SES_CONFIGURATION_SET": "mercadofresco-correo-dev",
	}
}

var builds = map[string]func(context.Context, *sqsconsumer.Runtime) (*sqsbatch.Processor, error){
	"preparar-pedido":     sqsconsumer.Preparation.FromRuntime,
	"aviso-erp":           sqsconsumer.ERPNotice.FromRuntime,
	"correo-confirmacion": confirmationmail.FromRuntime,
	"movimientos-stock":   stock.FromRuntime,
}

// Every consumer's main builds from the environment the CDK sets, without
// a network call.
func TestEveryConsumerBuildsFromItsEnvironment(t *testing.T) {
	for name, build := range builds {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p, err := sqsconsumer.Start(ctx, name, lambdaenv.FromMap(deployed()), build)
			if err != nil || p == nil {
				t.Fatalf("%v", err)
			}
		})
	}
}

// A consumer missing its variables refuses to start, naming them.
func TestMissingVariablesAreNamed(t *testing.T) {
	want := map[string][]string{
		"preparar-pedido":     {"ALMACEN_URL", "ALMACEN_SECRET_ARN", "IDEMPOTENCY_TABLE_NAME", "IDEMPOTENCY_WINDOW"},
		"aviso-erp":           {"ERP_URL", "ERP_SECRET_ARN", "IDEMPOTENCY_WINDOW"},
		"correo-confirmacion": {"CORREO_REMITENTE", "SES_CONFIGURATION_SET", "CORREO_SECUNDARIO_URL", "IDEMPOTENCY_WINDOW"},
		"movimientos-stock":   {"STOCK_TABLE_NAME"},
	}
	for name, build := range builds {
		t.Run(name, func(t *testing.T) {
			env := deployed()
			for _, k := range want[name] {
				delete(env, k)
			}
			_, err := sqsconsumer.Start(context.Background(), name, lambdaenv.FromMap(env), build)
			if !errors.Is(err, lambdaenv.ErrInvalid) {
				t.Fatalf("err = %v", err)
			}
			for _, k := range want[name] {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("the error does not name %s: %v", k, err)
				}
			}
		})
	}
}

func TestSettingsDefaultsAndBadValues(t *testing.T) {
	env := lambdaenv.FromMap(map[string]string{"ENTORNO": "prod"})
	s, err := sqsconsumer.LoadSettings(env)
	if err != nil || env.Err() != nil {
		t.Fatal(err, env.Err())
	}
	if s.Concurrency != sqsbatch.DefaultConcurrency || s.ConsumerVersion != "" || s.MaxReceiveCount != 0 {
		t.Fatalf("defaults %+v", s)
	}
	bad := lambdaenv.FromMap(map[string]string{"BATCH_CONCURRENCY": "0", "MAX_RECEIVE_COUNT": "x", "DLQ_URLS": "[]"})
	if _, err := sqsconsumer.LoadSettings(bad); err == nil {
		t.Fatal("a malformed DLQ_URLS was accepted")
	}
	for _, k := range []string{"ENTORNO", "BATCH_CONCURRENCY", "MAX_RECEIVE_COUNT"} {
		if e := bad.Err(); e == nil || !strings.Contains(e.Error(), k) {
			t.Errorf("%s not reported: %v", k, e)
		}
	}
}
