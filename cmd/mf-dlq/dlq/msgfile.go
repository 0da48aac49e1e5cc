package dlq

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fileMessage is one message in the shape of
// `aws sqs receive-message --attribute-names All --message-attribute-names All`.
type fileMessage struct {
	MessageID         string                   `json:"MessageId"`
	ReceiptHandle     string                   `json:"ReceiptHandle,omitempty"`
	MD5OfBody         string                   `json:"MD5OfBody,omitempty"`
	Body              string                   `json:"Body"`
	Attributes        map[string]string        `json:"Attributes,omitempty"`
	MessageAttributes map[string]fileAttribute `json:"MessageAttributes,omitempty"`
}

type fileAttribute struct {
	StringValue string `json:"StringValue,omitempty"`
	BinaryValue []byte `json:"BinaryValue,omitempty"` // base64, as the AWS CLI prints it
	DataType    string `json:"DataType"`
}

// WriteMessages writes msgs as JSON lines, one receive-message "Messages"
// element per line.
func WriteMessages(w io.Writer, msgs []types.Message) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, m := range msgs {
		if err := enc.Encode(toFile(m)); err != nil {
			return err
		}
	}
	return nil
}

func toFile(m types.Message) fileMessage {
	fm := fileMessage{MessageID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), MD5OfBody: aws.ToString(m.MD5OfBody), Body: aws.ToString(m.Body), Attributes: m.Attributes}
	if len(m.MessageAttributes) > 0 {
		fm.MessageAttributes = map[string]fileAttribute{}
		for k, a := range m.MessageAttributes {
			fm.MessageAttributes[k] = fileAttribute{StringValue: aws.ToString(a.StringValue), BinaryValue: a.BinaryValue, DataType: aws.ToString(a.DataType)}
		}
	}
	return fm
}

// ReadMessages reads messages saved by WriteMessages (JSON lines) or by the
// AWS CLI (one or more {"Messages": [...]} documents, e.g. several
// receive-message outputs concatenated).
func ReadMessages(r io.Reader) ([]types.Message, error) {
	dec := json.NewDecoder(bufio.NewReader(r))
	var out []types.Message
	for n := 1; ; n++ {
		var raw map[string]json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("JSON value %d: %w (want JSON lines of messages or receive-message output)", n, err)
		}
		var batch []fileMessage
		if msgs, ok := raw["Messages"]; ok {
			if err := json.Unmarshal(msgs, &batch); err != nil {
				return nil, fmt.Errorf("JSON value %d: Messages: %w", n, err)
			}
		} else {
			if _, ok := raw["Body"]; !ok {
				return nil, fmt.Errorf("JSON value %d is neither a message (no Body) nor a receive-message document (no Messages)", n)
			}
			var fm fileMessage
			b, _ := json.Marshal(raw) // re-encoding a decoded map cannot fail
			if err := json.Unmarshal(b, &fm); err != nil {
				return nil, fmt.Errorf("JSON value %d: %w", n, err)
			}
			batch = []fileMessage{fm}
		}
		for _, fm := range batch {
			m := types.Message{MessageId: aws.String(fm.MessageID), ReceiptHandle: aws.String(fm.ReceiptHandle), MD5OfBody: aws.String(fm.MD5OfBody), Body: aws.String(fm.Body), Attributes: fm.Attributes}
			if m.Attributes == nil {
				m.Attributes = map[string]string{}
			}
			for k, a := range fm.MessageAttributes {
				if m.MessageAttributes == nil {
					m.MessageAttributes = map[string]types.MessageAttributeValue{}
				}
				m.MessageAttributes[k] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: aws.String(a.StringValue), BinaryValue: a.BinaryValue}
			}
			out = append(out, m)
		}
	}
}

// WriteDocument writes msgs as one receive-message document,
// {"Messages": [...]}, which ReadMessages reads too.
func WriteDocument(w io.Writer, msgs []types.Message) error {
	doc := struct {
		Messages []fileMessage `json:"Messages"`
	}{Messages: []fileMessage{}}
	for _, m := range msgs {
		doc.Messages = append(doc.Messages, toFile(m))
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
