package events_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/events"
	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// queueTarget is a Target that builds an SQS target with the options.
func queueTarget(q awssqs.IQueue) func(o events.TargetOptions) awsevents.IRuleTarget {
	return func(o events.TargetOptions) awsevents.IRuleTarget {
		return awseventstargets.NewSqsQueue(q, &awseventstargets.SqsQueueProps{
			DeadLetterQueue: o.DeadLetterQueue, MaxEventAge: o.MaxEventAge, RetryAttempts: jsii.Number(o.RetryAttempts),
		})
	}
}

func resources(stack awscdk.Stack, typ string) map[string]map[string]any {
	raw, _ := json.Marshal(assertions.Template_FromStack(stack, nil).FindResources(jsii.String(typ), nil))
	var out map[string]map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

func pattern() *awsevents.EventPattern {
	return &awsevents.EventPattern{Source: jsii.Strings("mercadofresco.tienda")}
}

// On bus-mercadofresco with the zero-value options: the defaults of
// docs/design.md#bus-rules, a DLQ encrypted with the data key, and alarms
// whose dimensions name the bus and the rule.
func TestRuleOnTheBusDefaults(t *testing.T) {
	p := cdktest.NewPlatform("S")
	bus := awsevents.NewEventBus(p.Stack, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: jsii.String("bus-mercadofresco")})
	target := awssqs.NewQueue(p.Stack, jsii.String("Target"), nil)
	r := events.NewRule(p.Stack, "Regla", &events.RuleProps{
		Bus: bus, RuleName: jsii.String("mf-regla"), Pattern: pattern(), Target: queueTarget(target),
		Context: core.Context{DataKey: p.Key, Alerts: p.Alerts},
	})
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if r.RetryAttempts != events.DefaultRetryAttempts {
		t.Errorf("RetryAttempts = %v", r.RetryAttempts)
	}
	tpl := assertions.Template_FromStack(p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"Name":         "mf-regla",
		"EventBusName": map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^Bus"))},
		"Targets": []any{assertions.Match_ObjectLike(&map[string]any{
			"RetryPolicy":      map[string]any{"MaximumRetryAttempts": events.DefaultRetryAttempts, "MaximumEventAgeInSeconds": events.DefaultMaxEventAgeMinutes * 60},
			"DeadLetterConfig": map[string]any{"Arn": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^ReglaDeadLetterQueue")), "Arn"}}},
		})},
	})
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"KmsMasterKeyId": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^DataKey")), "Arn"}},
	})
	for _, metric := range []string{"FailedInvocations", "InvocationsSentToDlq"} {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
			"Namespace": "AWS/Events", "MetricName": metric,
			"Dimensions": assertions.Match_ArrayWith(&[]any{
				map[string]any{"Name": "EventBusName", "Value": assertions.Match_AnyValue()},
				map[string]any{"Name": "RuleName", "Value": assertions.Match_AnyValue()},
			}),
		})
	}
}

// On the default bus: no EventBusName, every target (Target and
// AdditionalTargets) with the same retry policy and the one DLQ, an
// SQS-managed DLQ when asked (no data key needed), and alarms on the
// RuleName dimension alone (how EventBridge publishes a default-bus rule's
// metrics).
func TestRuleOnTheDefaultBus(t *testing.T) {
	p := cdktest.NewPlatform("S")
	a := awssqs.NewQueue(p.Stack, jsii.String("A"), nil)
	b := awssqs.NewQueue(p.Stack, jsii.String("B"), nil)
	events.NewRule(p.Stack, "Vigilancia", &events.RuleProps{
		OnDefaultBus: true, RuleName: jsii.String("mf-vigilancia"),
		Pattern:           &awsevents.EventPattern{Source: jsii.Strings("aws.kms")},
		Target:            queueTarget(a),
		AdditionalTargets: []func(events.TargetOptions) awsevents.IRuleTarget{queueTarget(b)},
		RetryAttempts:     4, MaxEventAge: awscdk.Duration_Hours(jsii.Number(6)),
		Encryption: queues.EncryptionSQSManaged, Context: core.Context{Alerts: p.Alerts},
	})
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	rules := resources(p.Stack, "AWS::Events::Rule")
	if len(rules) != 1 {
		t.Fatalf("%d rules", len(rules))
	}
	for _, r := range rules {
		props := r["Properties"].(map[string]any)
		if bus, ok := props["EventBusName"]; ok {
			t.Errorf("EventBusName = %v, want none (the default bus)", bus)
		}
		targets := props["Targets"].([]any)
		if len(targets) != 2 {
			t.Fatalf("%d targets, want 2", len(targets))
		}
		var dlqs []string
		for _, tg := range targets {
			tm := tg.(map[string]any)
			rp, _ := json.Marshal(tm["RetryPolicy"])
			if string(rp) != `{"MaximumEventAgeInSeconds":21600,"MaximumRetryAttempts":4}` {
				t.Errorf("target %v: retry policy %s", tm["Id"], rp)
			}
			dl, _ := json.Marshal(tm["DeadLetterConfig"])
			dlqs = append(dlqs, string(dl))
		}
		if dlqs[0] != dlqs[1] || dlqs[0] == "null" {
			t.Errorf("the targets' DLQs %v, want the rule's one", dlqs)
		}
	}
	tpl := assertions.Template_FromStack(p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::SQS::Queue"), map[string]any{
		"SqsManagedSseEnabled": true, "KmsMasterKeyId": assertions.Match_Absent(),
		"RedriveAllowPolicy": map[string]any{"redrivePermission": "denyAll"},
	})
	eventAlarms := 0
	for id, al := range resources(p.Stack, "AWS::CloudWatch::Alarm") {
		props := al["Properties"].(map[string]any)
		if props["Namespace"] != "AWS/Events" {
			continue
		}
		eventAlarms++
		if dims, _ := props["Dimensions"].([]any); len(dims) != 1 || dims[0].(map[string]any)["Name"] != "RuleName" {
			t.Errorf("%s: dimensions %v, want RuleName only", id, dims)
		}
	}
	if eventAlarms != 2 {
		t.Errorf("%d AWS/Events alarms, want FailedInvocations and InvocationsSentToDlq", eventAlarms)
	}
}

func TestRuleInvalidProps(t *testing.T) {
	tests := []struct {
		name string
		set  func(p *events.RuleProps, bus awsevents.IEventBus)
		want string
	}{
		{"no bus", func(p *events.RuleProps, _ awsevents.IEventBus) { p.Bus = nil }, "Bus is required (or OnDefaultBus"},
		{"two buses", func(p *events.RuleProps, _ awsevents.IEventBus) { p.OnDefaultBus = true }, "Bus and OnDefaultBus exclude each other"},
		{"no pattern", func(p *events.RuleProps, _ awsevents.IEventBus) { p.Pattern = nil }, "Pattern is required"},
		{"no target", func(p *events.RuleProps, _ awsevents.IEventBus) { p.Target = nil }, "Target is required"},
		{"nil additional target", func(p *events.RuleProps, _ awsevents.IEventBus) {
			p.AdditionalTargets = []func(events.TargetOptions) awsevents.IRuleTarget{nil}
		}, "AdditionalTargets[0] is nil"},
		{"retries", func(p *events.RuleProps, _ awsevents.IEventBus) { p.RetryAttempts = 186 }, "RetryAttempts must be an integer in 0..185"},
		{"age", func(p *events.RuleProps, _ awsevents.IEventBus) {
			p.MaxEventAge = awscdk.Duration_Seconds(jsii.Number(30))
		}, "MaxEventAge must be between 1 min and 24 h"},
		{"data key missing", func(p *events.RuleProps, _ awsevents.IEventBus) { p.DataKey = nil }, "DataKey is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := cdktest.NewPlatform("S")
			bus := awsevents.NewEventBus(p.Stack, jsii.String("Bus"), nil)
			props := &events.RuleProps{
				Bus: bus, Pattern: pattern(), Target: queueTarget(awssqs.NewQueue(p.Stack, jsii.String("T"), nil)),
				Context: core.Context{DataKey: p.Key, Alerts: p.Alerts},
			}
			tc.set(props, bus)
			r := events.NewRule(p.Stack, "Regla", props)
			if r.Rule == nil || r.DeadLetterQueue == nil {
				t.Fatal("the rule is not built whole")
			}
			cdktest.RequireContains(t, cdktest.Errors(p.Stack), tc.want)
		})
	}
}
