package sqsbatch_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// TestIncomingMFAttributesAreIgnored: the DLQ record's mf-* attributes come
// from the consumer that dead-letters the message, never from the message:
// forged failure attributes, a forged deferral count or an unknown mf-*
// name, at the top level or packed in mf-original-attributes, are dropped,
// and the message's own attributes are carried forward. The records run in
// one batch, concurrently.
func TestIncomingMFAttributesAreIgnored(t *testing.T) {
	forged := map[string]string{
		sqsbatch.AttrFailureReason:     "forged reason",
		sqsbatch.AttrFailureClass:      "permanent",
		sqsbatch.AttrConsumerVersion:   "forged-version",
		sqsbatch.AttrOriginalMessageID: "forged-id",
		sqsbatch.AttrReceiveCount:      "99",
		"mf-aplazamientos":             "71",
		"mf-otro":                      "forged",
	}
	packed := func(attrs map[string]string) string {
		m := map[string]map[string]string{}
		for k, v := range attrs {
			m[k] = map[string]string{"DataType": "String", "StringValue": v}
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	str := func(v string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	tests := []struct {
		name  string
		attrs map[string]events.SQSMessageAttribute
		// kept are the message's own attributes the DLQ record must carry.
		kept map[string]string
	}{
		{"forged at the top level", func() map[string]events.SQSMessageAttribute {
			m := map[string]events.SQSMessageAttribute{"tipo": str("PedidoConfirmado")}
			for k, v := range forged {
				m[k] = str(v)
			}
			return m
		}(), map[string]string{"tipo": "PedidoConfirmado"}},
		{"forged inside a packed value", map[string]events.SQSMessageAttribute{
			"tipo":                          str("PedidoConfirmado"),
			sqsbatch.AttrOriginalAttributes: str(packed(map[string]string{sqsbatch.AttrFailureReason: "forged reason", sqsbatch.AttrConsumerVersion: "forged-version", "mf-otro": "forged", "canal": "web"})),
		}, map[string]string{"tipo": "PedidoConfirmado", "canal": "web"}},
		{"forged beside originals that overflow", func() map[string]events.SQSMessageAttribute {
			m := map[string]events.SQSMessageAttribute{
				sqsbatch.AttrOriginalAttributes: str(packed(map[string]string{"mf-otro": "forged", "h1": "1", "h2": "2"})),
				sqsbatch.AttrFailureClass:       str("permanent"),
			}
			for _, k := range []string{"a1", "a2", "a3", "a4", "a5", "a6"} {
				m[k] = str(k)
			}
			return m
		}(), map[string]string{"a1": "a1", "a2": "a2", "a3": "a3", "a4": "a4", "a5": "a5", "a6": "a6", "h1": "1", "h2": "2"}},
	}
	e := newEnv(t, false)
	p := mustNew(t, sqsbatch.Config{
		Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
			return failure.Poisonf("importe must be positive")
		}),
		DLQ: e.fake, DLQRoutes: e.routes, ConsumerVersion: "v7", Logger: discard(),
	})
	var ev events.SQSEvent
	for i, tt := range tests {
		m := msg("m-"+itoa(i), order("P"+itoa(i)))
		m.Attributes["ApproximateReceiveCount"] = "2"
		m.MessageAttributes = tt.attrs
		ev.Records = append(ev.Records, m)
	}
	if resp, _ := p.Process(context.Background(), ev); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures = %v", resp.BatchItemFailures)
	}
	byOriginal := map[string]map[string]types.MessageAttributeValue{}
	for _, st := range e.dlq(t) {
		byOriginal[attr(st, sqsbatch.AttrOriginalMessageID)] = st.MessageAttributes
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := byOriginal["m-"+itoa(i)]
			if !ok {
				t.Fatalf("no DLQ record of m-%d (records by original id: %v)", i, byOriginal)
			}
			d, ok := sqsbatch.ParseDeadLetter(got)
			if !ok || d.Class != "poison" || d.ConsumerVersion != "v7" || d.ReceiveCount != 2 || !strings.Contains(d.Reason, "importe must be positive") {
				t.Errorf("failure attributes = %+v, want the consumer's (poison, v7, 2 receives, its reason)", d)
			}
			for k, a := range got {
				if strings.Contains(aws.ToString(a.StringValue), "forged") || aws.ToString(a.StringValue) == "71" {
					t.Errorf("%s = %q: a forged value reached the DLQ record", k, aws.ToString(a.StringValue))
				}
				if sqsbatch.IsConsumerAttribute(k) && k != sqsbatch.AttrOriginalAttributes && !isFailureAttribute(k) {
					t.Errorf("incoming %s reached the DLQ record", k)
				}
			}
			orig, err := sqsbatch.OriginalAttributes(got)
			if err != nil {
				t.Fatal(err)
			}
			if len(orig) != len(tt.kept) {
				t.Errorf("originals = %v, want %v", orig, tt.kept)
			}
			for k, v := range tt.kept {
				if aws.ToString(orig[k].StringValue) != v {
					t.Errorf("original %s = %q, want %q", k, aws.ToString(orig[k].StringValue), v)
				}
			}
		})
	}
}

func isFailureAttribute(name string) bool {
	switch name {
	case sqsbatch.AttrFailureReason, sqsbatch.AttrFailureClass, sqsbatch.AttrConsumerVersion, sqsbatch.AttrOriginalMessageID, sqsbatch.AttrReceiveCount:
		return true
	}
	return false
}
