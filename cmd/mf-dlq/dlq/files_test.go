package dlq_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
)

func TestReadMessagesDocument(t *testing.T) {
	doc := `{"Messages":[{"MessageId":"a","Body":"{}","Attributes":{"SentTimestamp":"1764457200000"},
	  "MessageAttributes":{"mf-failure-class":{"StringValue":"poison","DataType":"String"},"b":{"BinaryValue":"AAE=","DataType":"Binary"}}}]}
	{"Messages":[{"MessageId":"b","Body":"x"}]}`
	msgs, err := dlq.ReadMessages(strings.NewReader(doc))
	if err != nil || len(msgs) != 2 || aws.ToString(msgs[0].MessageAttributes["mf-failure-class"].StringValue) != "poison" ||
		string(msgs[0].MessageAttributes["b"].BinaryValue) != "\x00\x01" || aws.ToString(msgs[1].MessageId) != "b" {
		t.Fatalf("ReadMessages = %+v, %v", msgs, err)
	}
	for _, bad := range []string{`{"Messages":[`, `{"nope":1}`, `[1]`} {
		if _, err := dlq.ReadMessages(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
