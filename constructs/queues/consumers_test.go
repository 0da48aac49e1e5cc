package queues_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/constructs/network"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/golambdatest"
)

// build makes one stack with the four consumers wired as the messaging
// stack does, on stand-ins of the platform, the network, the cache and the
// tables, with the checks and cdk-nag on. The functions are built from a
// fixture module whose mains have the consumers' entries.
func build(t *testing.T) (*cdktest.Platform, assertions.Template) {
	t.Helper()
	p := cdktest.NewPlatform("Consumidores")
	root, err := filepath.Abs("testdata/fixture")
	if err != nil {
		t.Fatal(err)
	}
	builder := golambdatest.Builder(t, root)
	net := network.New(p.Stack, "Red", &network.Props{MaxAzs: 2, NatGateways: 1, Context: core.Context{DataKey: p.Key}})
	catalogo := datastore.NewCache(p.Stack, "Cache", &datastore.CacheProps{Vpc: net.Vpc, Subnets: net.DataSubnets(), Context: core.Context{DataKey: p.Key, Alerts: p.Alerts}})
	idem := datastore.NewIdempotency(p.Stack, "Idem", &datastore.TableProps{Context: core.Context{DataKey: p.Key, Alerts: p.Alerts}})
	stock := datastore.NewStock(p.Stack, "Stock", &datastore.TableProps{Context: core.Context{DataKey: p.Key, Alerts: p.Alerts}})
	platform := queues.Platform{Context: core.Context{EnvironmentName: "prod", Builder: builder, DataKey: p.Key, Alerts: p.Alerts}, MaxConsumerConcurrency: 20}
	egress := queues.Egress{Vpc: net.Vpc, Subnets: net.EgressSubnets(), SecretsEndpoint: net.SecretsEndpoint, Breakers: catalogo}
	queues.NewPreparacion(p.Stack, "Preparacion", &queues.HTTPConsumerProps{
		Platform: platform, Egress: egress, IdempotencyTable: idem, URL: "https://almacen.example", MaxInFlight: 20,
		Names: queues.Names{Function: jsii.String("mf-preparar-pedido")},
	})
	queues.NewCorreo(p.Stack, "Correo", &queues.CorreoProps{Remitente: "pedidos@mercadofresco.example", HTTPConsumerProps: queues.HTTPConsumerProps{
		Platform: platform, Egress: egress, IdempotencyTable: idem,
		URL: "https://correo.example", MaxInFlight: 10, Names: queues.Names{Function: jsii.String("mf-correo-confirmacion")},
	}})
	queues.NewAvisoERP(p.Stack, "AvisoERP", &queues.HTTPConsumerProps{
		Platform: platform, Egress: egress, IdempotencyTable: idem, URL: "https://erp.example", MaxInFlight: 4,
		Names: queues.Names{Function: jsii.String("mf-aviso-erp")},
	})
	queues.NewMovimientosStock(p.Stack, "MovimientosStock", &queues.MovimientosStockProps{
		Platform: platform, StockTable: stock, Names: queues.Names{Function: jsii.String("mf-movimientos-stock")},
	})
	cdktest.Check(p.App)
	awscdk.Aspects_Of(p.App).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	return p, assertions.Template_FromStack(p.Stack, nil)
}

func policyOf(t *testing.T, tpl assertions.Template, fnName string) string {
	t.Helper()
	fns := tpl.FindResources(jsii.String("AWS::Lambda::Function"), map[string]any{"Properties": map[string]any{"FunctionName": fnName}})
	var role string
	for _, f := range *fns {
		role = (*f)["Properties"].(map[string]any)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
	}
	var out []string
	for _, p := range *tpl.FindResources(jsii.String("AWS::IAM::Policy"), nil) {
		props := (*p)["Properties"].(map[string]any)
		b, _ := json.Marshal(props["Roles"])
		if strings.Contains(string(b), `"`+role+`"`) {
			d, _ := json.Marshal(props["PolicyDocument"])
			out = append(out, string(d))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no policy for %s", fnName)
	}
	return strings.Join(out, "\n")
}

func TestConsumersSynthesiseCleanWithTheirDependencies(t *testing.T) {
	p, tpl := build(t)
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatalf("synthesis errors (cdk-nag, checks, constructs):\n%s", strings.Join(errs, "\n"))
	}
	// Ceilings against each dependency (queues.Ceiling) are the
	// mappings' MaximumConcurrency and the reserved concurrency.
	for fn, c := range map[string][2]float64{"mf-preparar-pedido": {4, 5}, "mf-correo-confirmacion": {2, 5}, "mf-aviso-erp": {2, 2}, "mf-movimientos-stock": {20, 10}} {
		tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
			"FunctionName": fn, "ReservedConcurrentExecutions": c[0],
			"Environment": map[string]any{"Variables": assertions.Match_ObjectLike(&map[string]any{"BATCH_CONCURRENCY": fmt.Sprint(int(c[1]))})},
		})
	}
	// The e-mail function sends only from its sender through its
	// configuration set.
	mail := policyOf(t, tpl, "mf-correo-confirmacion")
	for _, want := range []string{`"ses:SendEmail"`, `"ses:FromAddress":"pedidos@mercadofresco.example"`, `:identity/mercadofresco.example`, `:configuration-set/`} {
		if !strings.Contains(mail, want) {
			t.Errorf("the e-mail consumer's policy lacks %s:\n%s", want, mail)
		}
	}
	tpl.HasResourceProperties(jsii.String("AWS::SES::ConfigurationSet"), map[string]any{
		"SendingOptions": map[string]any{"SendingEnabled": true}, "DeliveryOptions": map[string]any{"TlsPolicy": "REQUIRE"},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SES::ConfigurationSetEventDestination"), map[string]any{
		"EventDestination": assertions.Match_ObjectLike(&map[string]any{"EventBridgeDestination": assertions.Match_AnyValue()}),
	})
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"EventBusName": "default",
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
			"DeadLetterConfig": assertions.Match_AnyValue(), "RetryPolicy": assertions.Match_AnyValue(),
		})},
	})
	// The stock consumer: its table's three item operations, nothing else
	// of DynamoDB; not in the VPC.
	stock := policyOf(t, tpl, "mf-movimientos-stock")
	if !strings.Contains(stock, `"dynamodb:GetItem","dynamodb:PutItem","dynamodb:UpdateItem"`) || strings.Contains(stock, "DeleteItem") || strings.Contains(stock, "secretsmanager") {
		t.Errorf("stock consumer policy:\n%s", stock)
	}
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{"FunctionName": "mf-movimientos-stock", "VpcConfig": assertions.Match_Absent()})
	// The warehouse consumer reads its own secret only, through Secrets
	// Manager's use of the data key.
	prep := policyOf(t, tpl, "mf-preparar-pedido")
	for _, want := range []string{`"secretsmanager:GetSecretValue"`, `"kms:ViaService":"secretsmanager.eu-west-1.amazonaws.com"`, `"dynamodb:DeleteItem"`} {
		if !strings.Contains(prep, want) {
			t.Errorf("the preparation consumer's policy lacks %s:\n%s", want, prep)
		}
	}
	// The cache admits the three HTTP consumers on its port.
	rules := tpl.FindResources(jsii.String("AWS::EC2::SecurityGroupIngress"), map[string]any{"Properties": map[string]any{"FromPort": 6379}})
	if n := len(*rules); n != 3 {
		t.Errorf("%d ingress rules on the cache's port, want 3 (one per HTTP consumer)", n)
	}
	// The Secrets Manager endpoint (private DNS: it takes every
	// GetSecretValue of the VPC) admits the three HTTP consumers on 443.
	rules = tpl.FindResources(jsii.String("AWS::EC2::SecurityGroupIngress"), map[string]any{"Properties": map[string]any{
		"FromPort": 443,
		"GroupId":  map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^RedVpcSecretsManager")), "GroupId"}},
	}})
	if n := len(*rules); n != 3 {
		t.Errorf("%d ingress rules on the Secrets Manager endpoint, want 3 (one per HTTP consumer)", n)
	}
}

func TestMissingDependenciesAreReported(t *testing.T) {
	p := cdktest.NewPlatform("Incompleto")
	queues.NewPreparacion(p.Stack, "Preparacion", &queues.HTTPConsumerProps{
		Platform: queues.Platform{Context: core.Context{EnvironmentName: "dev", Builder: golambdatest.Builder(t, "testdata/fixture")}, MaxConsumerConcurrency: 2},
		URL:      "http://almacen.example", MaxInFlight: 4,
	})
	errs := cdktest.Errors(p.Stack)
	for _, want := range [][]string{{"consumers ", "DataKey is required"}, {"consumers ", "Alerts is required"}, {"Egress.Vpc"}, {"IdempotencyTable is required"}, {"must be an https URL"}, {"the breaker store"}} {
		cdktest.RequireContains(t, errs, want...)
	}
}
