package guardrails_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/contract"
	"github.com/mercadofresco/integration/constructs/guardrails"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

// routeApp is a small app: a producer stack and a consumer stack (the same
// stack unless split), with the bus and topic the routes cross.
type routeApp struct {
	app                awscdk.App
	producer, consumer awscdk.Stack
	bus                awsevents.EventBus
	topic              awssns.Topic
}

func newRouteApp(split bool) *routeApp {
	app := awscdk.NewApp(nil)
	env := &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("eu-west-1")}
	r := &routeApp{app: app}
	r.consumer = awscdk.NewStack(app, jsii.String("Consumers"), &awscdk.StackProps{Env: env})
	r.producer = r.consumer
	if split {
		r.producer = awscdk.NewStack(app, jsii.String("Producers"), &awscdk.StackProps{Env: env})
	}
	r.bus = awsevents.NewEventBus(r.consumer, jsii.String("Bus"), nil)
	r.topic = awssns.NewTopic(r.consumer, jsii.String("Topic"), nil)
	return r
}

// consumerOn is a function draining a new queue, accepting typ in versions.
func (r *routeApp) consumerOn(id, typ string, versions ...int) (awssqs.Queue, awslambda.Function) {
	q := awssqs.NewQueue(r.consumer, jsii.String(id+"Queue"), nil)
	fn := awslambda.NewFunction(r.consumer, jsii.String(id), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
	})
	fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, nil))
	if len(versions) > 0 {
		contract.Accepts(fn, typ, versions)
	}
	return q, fn
}

// producerFn is a function of the producer stack (what it sends is declared).
func (r *routeApp) producerFn(id string) awslambda.Function {
	return awslambda.NewFunction(r.producer, jsii.String(id), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_NODEJS_22_X(),
		Handler: jsii.String("index.handler"),
		Code:    awslambda.Code_FromInline(jsii.String("exports.handler = async () => ({})")),
	})
}

func (r *routeApp) rule(id string, pattern *awsevents.EventPattern, targets ...awsevents.IRuleTarget) awsevents.Rule {
	rule := awsevents.NewRule(r.consumer, jsii.String(id), &awsevents.RuleProps{EventBus: r.bus, EventPattern: pattern})
	for _, t := range targets {
		rule.AddTarget(t)
	}
	return rule
}

func pedidoPattern() *awsevents.EventPattern {
	return &awsevents.EventPattern{Source: jsii.Strings(eventsapi.SourceTienda), DetailType: jsii.Strings(eventsapi.TypePedidoCreado)}
}

func TestContractRoutes(t *testing.T) {
	const creado, confirmado = eventsapi.TypePedidoCreado, eventsapi.TypePedidoConfirmado
	tests := []struct {
		name  string
		build func(r *routeApp)
		// want are substrings of the one finding expected ("" = none).
		want []string
	}{
		{"v2 producer, v1 consumer through a bus rule: refused", func(r *routeApp) {
			q, _ := r.consumerOn("Starter", creado, 1)
			r.rule("PedidoRule", pedidoPattern(), awseventstargets.NewSqsQueue(q, nil))
			contract.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{2}, r.bus)
		}, []string{"[MF-CONTRACT]", "Consumers/Shop/Resource", "PedidoCreado version 2", "rule ", "Consumers/Starter/Resource", "accepts version 1 only"}},
		{"v2 producer after the consumer accepts v2: allowed", func(r *routeApp) {
			q, _ := r.consumerOn("Starter", creado, 1, 2)
			r.rule("PedidoRule", pedidoPattern(), awseventstargets.NewSqsQueue(q, nil))
			contract.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1, 2}, r.bus)
		}, nil},
		{"a rule pattern on detail.version keeps v2 away: allowed", func(r *routeApp) {
			q, _ := r.consumerOn("Starter", creado, 1)
			p := pedidoPattern()
			p.Detail = &map[string]any{"version": []any{1}}
			r.rule("PedidoRule", p, awseventstargets.NewSqsQueue(q, nil))
			contract.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1, 2}, r.bus)
		}, nil},
		{"a rule on another detail-type does not route it: allowed", func(r *routeApp) {
			q, _ := r.consumerOn("Carts", eventsapi.TypeCarritoAbandonado, 1)
			r.rule("CartRule", &awsevents.EventPattern{DetailType: jsii.Strings(eventsapi.TypeCarritoAbandonado)}, awseventstargets.NewSqsQueue(q, nil))
			contract.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{2}, r.bus)
		}, nil},
		{"v2 through SNS without a filter: refused", func(r *routeApp) {
			q, _ := r.consumerOn("Prep", confirmado, 1)
			r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(q, &awssnssubscriptions.SqsSubscriptionProps{RawMessageDelivery: jsii.Bool(true)}))
			contract.Produces(r.producerFn("Workflow"), confirmado, []int{2}, r.topic)
		}, []string{"[MF-CONTRACT]", "Consumers/Workflow/Resource", "PedidoConfirmado version 2", "subscription", "Consumers/Prep/Resource"}},
		{"v2 through SNS with a filter policy keeping v2 away: allowed", func(r *routeApp) {
			q, _ := r.consumerOn("Prep", confirmado, 1)
			r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(q, &awssnssubscriptions.SqsSubscriptionProps{
				RawMessageDelivery: jsii.Bool(true),
				FilterPolicy: &map[string]awssns.SubscriptionFilter{
					eventsapi.AttrVersion: awssns.SubscriptionFilter_StringFilter(&awssns.StringConditions{Allowlist: jsii.Strings("1")}),
				},
			}))
			contract.Produces(r.producerFn("Workflow"), confirmado, []int{1, 2}, r.topic)
		}, nil},
		{"v2 from an input transformer, v1 consumer: refused", func(r *routeApp) {
			q, _ := r.consumerOn("ERP", "AvisoPedidoERP", 1)
			rule := r.rule("ERPRule", pedidoPattern(), awseventstargets.NewSqsQueue(q, &awseventstargets.SqsQueueProps{
				Message: awsevents.RuleTargetInput_FromObject(map[string]any{"version": 2, "pedido_id": awsevents.EventField_FromPath(jsii.String("$.detail.pedido_id"))}),
			}))
			contract.Accepts(rule, creado, []int{1})
			contract.Produces(rule, "AvisoPedidoERP", []int{2}, nil)
			contract.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1}, r.bus)
		}, []string{"[MF-CONTRACT]", "Consumers/ERPRule/Resource", "AvisoPedidoERP version 2", "Consumers/ERP/Resource", "rewriting events of Consumers/Shop/Resource"}},
		{"an input transformer that declares nothing: refused", func(r *routeApp) {
			q, _ := r.consumerOn("ERP", "AvisoPedidoERP", 1)
			rule := r.rule("ERPRule", pedidoPattern(), awseventstargets.NewSqsQueue(q, &awseventstargets.SqsQueueProps{
				Message: awsevents.RuleTargetInput_FromObject(map[string]any{"pedido_id": awsevents.EventField_FromPath(jsii.String("$.detail.pedido_id"))}),
			}))
			contract.Accepts(rule, creado, []int{1})
			contract.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, creado, []int{1}, r.bus)
		}, []string{"[MF-CONTRACT]", "Consumers/ERPRule/Resource", "input transformer but declares no contract"}},
		{"a consumer that declares nothing: refused", func(r *routeApp) {
			q, _ := r.consumerOn("Prep", confirmado)
			r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(q, nil))
			contract.Produces(r.producerFn("Workflow"), confirmado, []int{1}, r.topic)
		}, []string{"[MF-CONTRACT]", "Consumers/Prep/Resource", "declares no accepted versions"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouteApp(false)
			tc.build(r)
			assertFindings(t, guardrails.NewRouteGraph(r.app).Check(), tc.want)
		})
	}
}

func assertFindings(t *testing.T, found []guardrails.Finding, want []string) {
	t.Helper()
	if want == nil {
		for _, f := range found {
			t.Errorf("unexpected finding: %s", f)
		}
		return
	}
	if len(found) != 1 {
		t.Fatalf("want one finding with %q, got %d: %v", want, len(found), found)
	}
	for _, w := range want {
		if !strings.Contains(found[0].String(), w) {
			t.Errorf("finding %q does not contain %q", found[0], w)
		}
	}
}

// A producer whose stack does not depend on its consumer's stack may be
// deployed first; declaring the dependency puts the consumers first.
func TestContractDeployOrder(t *testing.T) {
	for _, dependency := range []bool{false, true} {
		r := newRouteApp(true)
		q, _ := r.consumerOn("Prep", eventsapi.TypePedidoConfirmado, 1)
		r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(q, nil))
		contract.Produces(r.producerFn("Workflow"), eventsapi.TypePedidoConfirmado, []int{1}, r.topic)
		if dependency {
			r.producer.AddStackDependency(r.consumer, jsii.String("consumers first"))
			assertFindings(t, guardrails.NewRouteGraph(r.app).Check(), nil)
			continue
		}
		assertFindings(t, guardrails.NewRouteGraph(r.app).Check(), []string{"[MF-CONTRACT-ORDER]", "Producers/Workflow/Resource", "Producers.AddStackDependency(Consumers)"})
	}
}

// A stack that references the consumer's resources depends on it (the
// reference becomes an export): no explicit dependency is needed.
func TestContractDeployOrderFromReferences(t *testing.T) {
	r := newRouteApp(true)
	q, _ := r.consumerOn("Prep", eventsapi.TypePedidoConfirmado, 1)
	r.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(q, nil))
	fn := r.producerFn("Workflow")
	r.topic.GrantPublish(fn)
	contract.Produces(fn, eventsapi.TypePedidoConfirmado, []int{1}, r.topic)
	assertFindings(t, guardrails.NewRouteGraph(r.app).Check(), nil)
}

// The aspect reports a finding as an error annotation on the producer, so
// synthesis fails naming the route.
func TestContractChecksFailSynth(t *testing.T) {
	r := newRouteApp(false)
	guardrails.Apply(r.app)
	q, _ := r.consumerOn("Starter", eventsapi.TypePedidoCreado, 1)
	r.rule("PedidoRule", pedidoPattern(), awseventstargets.NewSqsQueue(q, nil))
	contract.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, eventsapi.TypePedidoCreado, []int{2}, r.bus)
	errs := cdktest.Errors(r.consumer)
	if !slices.ContainsFunc(errs, func(e string) bool {
		return strings.Contains(e, "[MF-CONTRACT]") && strings.Contains(e, "PedidoCreado version 2") && strings.Contains(e, "Consumers/Starter/Resource")
	}) {
		t.Fatalf("no MF-CONTRACT error: %v", errs)
	}
}

// An API destination's L1 is not its default child: its declaration still
// reaches the template, and the route through a transforming rule checks it.
func TestContractApiDestinationConsumer(t *testing.T) {
	r := newRouteApp(false)
	conn := awsevents.NewConnection(r.consumer, jsii.String("Conn"), &awsevents.ConnectionProps{
		Authorization: awsevents.Authorization_ApiKey(jsii.String("x-api-key"), awscdk.SecretValue_UnsafePlainText(jsii.String("k"))),
	})
	dest := awsevents.NewApiDestination(r.consumer, jsii.String("Dest"), &awsevents.ApiDestinationProps{Connection: conn, Endpoint: jsii.String("https://erp.example.com")})
	contract.Accepts(dest, "AvisoPedidoERP", []int{1})
	rule := r.rule("ERPRule", pedidoPattern(), awseventstargets.NewApiDestination(dest, &awseventstargets.ApiDestinationProps{
		Event: awsevents.RuleTargetInput_FromObject(map[string]any{"version": awsevents.EventField_FromPath(jsii.String("$.detail.version"))}),
	}))
	contract.Accepts(rule, eventsapi.TypePedidoCreado, []int{1, 2})
	contract.Produces(rule, "AvisoPedidoERP", nil, nil) // copies the version
	contract.ProducesOnBus(r.producerFn("Shop"), eventsapi.SourceTienda, eventsapi.TypePedidoCreado, []int{2}, r.bus)
	assertFindings(t, guardrails.NewRouteGraph(r.app).Check(), []string{"[MF-CONTRACT]", "Consumers/ERPRule/Resource", "AvisoPedidoERP version 2", "Consumers/Dest/ApiDestination", "accepts version 1 only"})
}
