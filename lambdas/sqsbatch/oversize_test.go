package sqsbatch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/smithy-go"

	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

// bigOrder is a valid order whose body is n bytes.
func bigOrder(n int) string {
	head := `{"version":1,"tipo":"PedidoConfirmado","pedido_id":"P-GRANDE","nota":"`
	return head + strings.Repeat("x", n-len(head)-2) + `"}`
}

func recordBytes(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for k, a := range attrs {
		n += len(k) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	return n
}

// A poison message as large as SQS allows: its DLQ record (body, its own
// attributes, the failure attributes) must still fit in 256 KiB, or the
// reason is lost when the redrive moves the message instead.
func TestOversizeDeadLetter(t *testing.T) {
	str := func(v string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	longReason := strings.Repeat("importe must be positive; ", 60) // > 1 KiB
	for _, tc := range []struct {
		name       string
		body       string
		attrs      map[string]events.SQSMessageAttribute
		downFirst  bool // the DLQ refuses the first send
		replaced   bool // the DLQ record replaces the original (acknowledged)
		truncated  bool // a reason record with the start of the body
		wantReason string
	}{
		{"room for a shortened reason", bigOrder(sqsbatch.MaxMessageBytes - 400), map[string]events.SQSMessageAttribute{"tipo": str("PedidoConfirmado")}, false, true, false, "importe must be positive"},
		{"no room at all", bigOrder(sqsbatch.MaxMessageBytes - 40), map[string]events.SQSMessageAttribute{"tipo": str("PedidoConfirmado")}, false, false, true, "importe must be positive"},
		{"the DLQ refuses the full record", order("P-1"), nil, true, false, true, "importe must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, false)
			if tc.downFirst {
				first := true
				e.fake.SetFault(func(op, u string) error {
					if op == "SendMessage" && first {
						first = false
						return &smithy.GenericAPIError{Code: "InvalidParameterValue", Message: "DLQ unavailable"}
					}
					return nil
				})
			}
			p := mustNew(t, sqsbatch.Config{
				Handler: sqsbatch.HandlerFunc(func(context.Context, *sqsbatch.Record) error {
					return failure.Poison(errors.New(longReason))
				}),
				DLQ: e.fake, DLQRoutes: e.routes, ConsumerVersion: "v7", Logger: discard(),
			})
			m := msg("m-1", tc.body)
			m.MessageAttributes = tc.attrs
			resp, _ := p.Process(context.Background(), events.SQSEvent{Records: []events.SQSMessage{m}})
			if acked := len(resp.BatchItemFailures) == 0; acked != tc.replaced {
				t.Fatalf("acknowledged %v, want %v (failures %v)", acked, tc.replaced, resp.BatchItemFailures)
			}
			dlq := e.dlq(t)
			if len(dlq) != 1 {
				t.Fatalf("%d DLQ records, want 1", len(dlq))
			}
			st := dlq[0]
			if n := recordBytes(st.Body, st.MessageAttributes); n > sqsbatch.MaxMessageBytes {
				t.Errorf("DLQ record of %d bytes, over %d", n, sqsbatch.MaxMessageBytes)
			}
			d, ok := sqsbatch.ParseDeadLetter(st.MessageAttributes)
			if !ok || !strings.Contains(d.Reason, tc.wantReason) || d.OriginalMessageID != "m-1" || d.Class != "poison" {
				t.Errorf("failure attributes %+v, want the reason, class and original id", d)
			}
			truncated := attr(st, sqsbatch.AttrBodyTruncated) == "true"
			if truncated != tc.truncated {
				t.Errorf("%s = %v, want %v", sqsbatch.AttrBodyTruncated, truncated, tc.truncated)
			}
			switch {
			case tc.replaced && st.Body != tc.body:
				t.Errorf("the record that replaces the original changed its body (%d bytes of %d)", len(st.Body), len(tc.body))
			case tc.replaced && attr(st, "tipo") != "PedidoConfirmado":
				t.Errorf("the record that replaces the original lost its attributes: %v", st.MessageAttributes)
			case tc.truncated && !strings.HasPrefix(tc.body, strings.TrimSuffix(st.Body, "…")):
				t.Errorf("the reason record's body is not the start of the original's")
			}
		})
	}
}
