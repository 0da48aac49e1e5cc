package payment_test

import (
	"context"
	"encoding/json"
	"github.com/mercadofresco/integration/internal/lambdatest"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/lambdaenv"
	"github.com/mercadofresco/integration/lambdas/payment"
	"github.com/mercadofresco/integration/lambdas/signing"
	"log/slog"
	"os"
	"testing"
	"time"
)

// deployedGateway sets function's environment from the prod template, with
// GATEWAY_URL (the payment gateway) and the breaker cache's address pointed
// at local servers; the gateway accepts only the API key the endpoint
// answers for GATEWAY_SECRET_ARN.
func deployedGateway(t *testing.T, function string) (map[string]string, *localaws.Endpoint, *lambdatest.Gateway, *lambdatest.BreakerCache) {
	t.Helper()
	env := lambdatest.DeployedEnv(t, "MercadoFresco-OrderFlow-prod", function)
	aws := localaws.NewEndpoint(t, nil)
	gw := lambdatest.NewGateway(aws.Secret(env["GATEWAY_SECRET_ARN"]))
	t.Cleanup(gw.Close)
	env["GATEWAY_URL"] = gw.URL()
	cache := lambdatest.NewBreakerCache(t, env)
	lambdatest.Setenv(t, env, aws.URL)
	return env, aws, gw, cache
}

// signedCharge is the cobro input of an order of 48.20 EUR, signed with the
// key the endpoint serves for the signing secret of secretARN (as the
// outbox publisher signs it).
func signedCharge(t *testing.T, aws *localaws.Endpoint, secretARN, pedidoID string) json.RawMessage {
	t.Helper()
	in := lambdaapi.CobroInput{PedidoID: pedidoID, ImporteCentimos: 4820, Moneda: "EUR", TokenTarjeta: "tok_ok", IDEvento: "out-" + pedidoID}
	key := signing.Key{ID: localaws.SecretVersion, Secret: []byte(aws.Secret(secretARN))}
	sig, err := signing.Sign(key, signing.Charge{EventID: in.IDEvento, OrderID: in.PedidoID, AmountCents: in.ImporteCentimos, Currency: in.Moneda, CardToken: in.TokenTarjeta})
	if err != nil {
		t.Fatal(err)
	}
	in.Firma = sig
	raw, _ := json.Marshal(in)
	return raw
}

// wantGatewayCall fails the test unless the gateway's one request to path
// is keyed exactly key(pedidoID), the idempotency table got the claim of
// that key and the breaker reached the cache.
func wantGatewayCall(t *testing.T, env map[string]string, aws *localaws.Endpoint, gw *lambdatest.Gateway, cache *lambdatest.BreakerCache,
	path string, key func(string) (string, error), pedidoID string) {
	t.Helper()
	k, err := key(pedidoID)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, r := range gw.Requests() {
		if r.Path == path {
			calls = append(calls, r.IdempotencyKey)
		}
	}
	if len(calls) != 1 || calls[0] != k {
		t.Fatalf("gateway POSTs of %s with keys %q, want one keyed %s", path, calls, k)
	}
	localaws.WantRequest(t, aws, "DynamoDB_20120810.PutItem", `"TableName":"`+env["IDEMPOTENCY_TABLE_NAME"]+`"`,
		`"`+lambdaapi.IdempotencyKeyAttribute+`":{"S":"`+k+`"}`)
	cache.WantReached(t)
}

// The deployed charge task, built as its main builds it
// (payment.CobroFunction, lambdas/cobro) from mf-cobro's environment in the
// prod template: an order's charge, signed with the key of
// SIGNING_SECRET_ARN, reaches the gateway as one POST of
// /v1/cobros with its Idempotency-Key and the API key of GATEWAY_SECRET_ARN
// (the gateway refuses any other), after a claim on the template's
// idempotency table and a look at its breaker in the cache. Replacing the
// gateway's, DynamoDB's or the cache's client with one that does nothing
// fails it.
func TestDeployedCobroChargesGateway(t *testing.T) {
	env, aws, gw, cache := deployedGateway(t, "mf-cobro")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cobro, err := payment.CobroFunction(ctx, lambdaenv.New(os.Getenv), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	out, err := cobro(ctx, signedCharge(t, aws, env["SIGNING_SECRET_ARN"], "P-91"))
	if err != nil {
		t.Fatal(err)
	}
	if n := gw.ChargesFor("P-91"); n != 1 || out.ReferenciaCobro != gw.Charges()[0].ID {
		t.Fatalf("gateway charged P-91 %d times, task answered %+v", n, out)
	}
	wantGatewayCall(t, env, aws, gw, cache, payment.PathCobros, idempotency.KeyCobro, "P-91")
}

// The deployed refund task, built as its main builds it
// (payment.ReembolsoFunction, lambdas/reembolso) from mf-reembolso's
// environment in the prod template, with the idempotency table in dynalite
// (the refund reads the charge's record): after the charge task charged an
// order, its refund reaches the gateway as one POST of /v1/reembolsos with
// its Idempotency-Key and the API key of GATEWAY_SECRET_ARN, after a claim
// on the template's idempotency table and a look at its breaker in the
// cache. Replacing the gateway's, DynamoDB's or the cache's client with one
// that does nothing fails it.
func TestDeployedReembolsoRefundsGateway(t *testing.T) {
	env, aws, gw, cache := deployedGateway(t, "mf-reembolso")
	ddb := localaws.StartDynalite(t)
	ddb.CreateTable(t, env["IDEMPOTENCY_TABLE_NAME"], lambdaapi.IdempotencyKeyAttribute, "")
	aws.Forward(t, "DynamoDB_20120810.", ddb.Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fenv, log := lambdaenv.New(os.Getenv), slog.New(slog.DiscardHandler)
	// The charge before the refund: mf-cobro's variables are mf-reembolso's
	// and its signing key's, which the refund does not read.
	signingKey := lambdatest.DeployedEnv(t, "MercadoFresco-OrderFlow-prod", "mf-cobro")["SIGNING_SECRET_ARN"]
	t.Setenv("SIGNING_SECRET_ARN", signingKey)
	cobro, err := payment.CobroFunction(ctx, fenv, log)
	if err != nil {
		t.Fatal(err)
	}
	charged, err := cobro(ctx, signedCharge(t, aws, signingKey, "P-92"))
	if err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("SIGNING_SECRET_ARN") // restored by t.Setenv's cleanup
	reembolso, err := payment.ReembolsoFunction(ctx, fenv, log)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(lambdaapi.ReembolsoInput{PedidoID: "P-92", ReferenciaCobro: charged.ReferenciaCobro, ImporteCentimos: 4820, Moneda: "EUR"})
	out, err := reembolso(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if refunds := gw.Refunds(); len(refunds) != 1 || refunds[0].ReferenciaCobro != charged.ReferenciaCobro || out.ReferenciaReembolso != refunds[0].ID {
		t.Fatalf("gateway refunds %+v, task answered %+v, want one refund of %s", refunds, out, charged.ReferenciaCobro)
	}
	wantGatewayCall(t, env, aws, gw, cache, payment.PathReembolsos, idempotency.KeyReembolso, "P-92")
}
