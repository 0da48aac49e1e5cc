package test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/queues"
	"github.com/mercadofresco/integration/lambdas/eventsapi"
)

func TestPlatformPerEnvironment(t *testing.T) {
	s := synthApp(t)
	cases := []struct {
		env, suffix string
		keyDeletion string
		archiveDays float64
		termination bool
	}{
		{"dev", "-dev", "Delete", 7, false},
		{"staging", "-staging", "Retain", 30, false},
		{"prod", "", "Retain", 60, true},
	}
	for _, tc := range cases {
		t.Run(tc.env, func(t *testing.T) {
			var es = s.env(t, tc.env)
			tpl := assertions.Template_FromStack(es.Platform.Stack, nil)

			// alias/mercadofresco-datos: rotation on, per-environment alias.
			tpl.HasResource(jsii.String("AWS::KMS::Key"), map[string]any{
				"Properties":     map[string]any{"EnableKeyRotation": true},
				"DeletionPolicy": tc.keyDeletion,
			})
			tpl.HasResourceProperties(jsii.String("AWS::KMS::Alias"), map[string]any{
				"AliasName": "alias/mercadofresco-datos" + tc.suffix,
			})
			// The services that act for us without a role of ours may use it.
			for _, principal := range []string{"cloudwatch.amazonaws.com", "sns.amazonaws.com", "events.amazonaws.com", "logs.eu-west-1.amazonaws.com"} {
				tpl.HasResourceProperties(jsii.String("AWS::KMS::Key"), map[string]any{
					"KeyPolicy": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
						assertions.Match_ObjectLike(&map[string]any{"Effect": "Allow", "Principal": map[string]any{"Service": principal}}),
					})},
				})
			}

			// alertas-mercadofresco: encrypted with the data key, TLS only,
			// CloudWatch may publish, e-mail subscribed.
			tpl.HasResourceProperties(jsii.String("AWS::SNS::Topic"), map[string]any{
				"TopicName":      "alertas-mercadofresco" + tc.suffix,
				"KmsMasterKeyId": map[string]any{"Fn::GetAtt": []any{assertions.Match_StringLikeRegexp(jsii.String("^DataKey")), "Arn"}},
			})
			tpl.HasResourceProperties(jsii.String("AWS::SNS::TopicPolicy"), map[string]any{
				"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
					assertions.Match_ObjectLike(&map[string]any{"Effect": "Deny", "Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}}),
					assertions.Match_ObjectLike(&map[string]any{"Effect": "Allow", "Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"}, "Action": "sns:Publish"}),
				})},
			})
			tpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{
				"Protocol": "email",
				"Endpoint": es.Env.AlarmEmail,
			})

			// bus-mercadofresco with an archive of its events.
			tpl.HasResourceProperties(jsii.String("AWS::Events::EventBus"), map[string]any{"Name": "bus-mercadofresco" + tc.suffix})
			tpl.HasResourceProperties(jsii.String("AWS::Events::Archive"), map[string]any{"RetentionDays": tc.archiveDays})

			if got := *es.Platform.TerminationProtection(); got != tc.termination {
				t.Errorf("termination protection = %v, want %v", got, tc.termination)
			}
		})
	}
}

// Every alarm of the app notifies alertas-mercadofresco of its environment,
// both when it fires and when it clears. The data key's watch is the one
// exception: its own alarms go to alertas-mercadofresco-clave, the topic
// that works while the data key does not.
func TestEveryAlarmTargetsTheAlertsTopic(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		watch := es.Platform.KeyWatch
		keyTopic := *es.Platform.GetLogicalId(watch.Topic.Node().DefaultChild().(awscdk.CfnElement))
		watchAlarms := 0
		for _, st := range es.Stacks() {
			for id, alarm := range s.resources(t, *st.StackName(), "AWS::CloudWatch::Alarm") {
				props := alarm["Properties"].(map[string]any)
				path, _ := alarm["Metadata"].(map[string]any)["aws:cdk:path"].(string)
				inWatch := strings.HasPrefix(path, *watch.Node().Path()+"/")
				if inWatch {
					watchAlarms++
				}
				for _, field := range []string{"AlarmActions", "OKActions"} {
					actions, _ := props[field].([]any)
					raw, _ := json.Marshal(actions)
					// Same stack: {"Ref":"Alerts..."}; other stacks: an
					// import of the platform stack's Alerts export.
					switch {
					case inWatch && (len(actions) != 1 || string(raw) != `[{"Ref":"`+keyTopic+`"}]`):
						t.Errorf("%s/%s: %s = %s, want the key's own topic %s", *st.StackName(), id, field, raw, keyTopic)
					case !inWatch && (len(actions) != 1 || !strings.Contains(string(raw), "Alerts")):
						t.Errorf("%s/%s: %s = %s, want the alerts topic", *st.StackName(), id, field, raw)
					}
				}
			}
		}
		if watchAlarms != 3 {
			t.Errorf("%s: %d alarms of the key watch, want 3 (failed invocations, sent to DLQ, DLQ depth)", es.Env.Name, watchAlarms)
		}
	}
}

// In every environment as synthesised, each replay window covers its
// longest legitimate pass: the three fan-out consumers' windows (45 days)
// their queues' passes with SNS's 23 days of delivery retries, and the
// starter's 89 days an archived event's pass (the environment's archive
// retention + the rule's 2 h + the buffer's DLQ and one redrive). The
// stock consumer has none.
func TestReplayWindowsCoverTheirPasses(t *testing.T) {
	s := synthApp(t)
	for _, es := range s.envs {
		m := es.Messaging
		for name, c := range map[string]*queues.Consumer{
			"preparar-pedido": m.Preparacion.Consumer, "correo-confirmacion": m.Correo.Consumer, "aviso-erp": m.AvisoERP.Consumer,
		} {
			if c.IdempotencyWindow != 45*24*time.Hour || c.LongestPass.Total() > c.IdempotencyWindow || c.LongestPass.Upstream != queues.FanOutMaxDeliveryAge {
				t.Errorf("%s %s: window %s, pass %s", es.Env.Name, name, c.IdempotencyWindow, c.LongestPass)
			}
		}
		if w := m.MovimientosStock.IdempotencyWindow; w != 0 {
			t.Errorf("%s movimientos-stock has a window of %s: its line items never expire", es.Env.Name, w)
		}
		st := es.OrderFlow.Starter
		if p := st.LongestPass; p.Total() > eventsapi.StarterWindow || p.Upstream < time.Duration(es.Env.ArchiveRetentionDays)*24*time.Hour {
			t.Errorf("%s starter: pass %s, window %s", es.Env.Name, p, eventsapi.StarterWindow)
		}
	}
}
