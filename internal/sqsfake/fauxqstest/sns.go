package fauxqstest

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The SNS side of fauxqs, for tests of SNS-to-SQS fan-out: its query API
// (form-encoded, XML answers) spoken directly, so the project needs no SNS
// client of its own. Topics live in Region.

// CreateTopic creates a standard topic and returns its ARN.
func (s *Server) CreateTopic(ctx context.Context, name string) (string, error) {
	var out struct {
		TopicArn string `xml:"CreateTopicResult>TopicArn"`
	}
	err := s.sns(ctx, url.Values{"Action": {"CreateTopic"}, "Name": {name}}, &out)
	return out.TopicArn, err
}

// Subscribe subscribes the queue queueARN to topicARN, with raw message
// delivery when raw is true, and returns the subscription's ARN.
func (s *Server) Subscribe(ctx context.Context, topicARN, queueARN string, raw bool) (string, error) {
	v := url.Values{"Action": {"Subscribe"}, "TopicArn": {topicARN}, "Protocol": {"sqs"}, "Endpoint": {queueARN}}
	if raw {
		v.Set("Attributes.entry.1.key", "RawMessageDelivery")
		v.Set("Attributes.entry.1.value", "true")
	}
	var out struct {
		SubscriptionArn string `xml:"SubscribeResult>SubscriptionArn"`
	}
	err := s.sns(ctx, v, &out)
	return out.SubscriptionArn, err
}

// Publish publishes message to topicARN with String message attributes and
// returns the message id.
func (s *Server) Publish(ctx context.Context, topicARN, message string, attrs map[string]string) (string, error) {
	v := url.Values{"Action": {"Publish"}, "TopicArn": {topicARN}, "Message": {message}}
	for i, n := range slices.Sorted(maps.Keys(attrs)) {
		p := "MessageAttributes.entry." + strconv.Itoa(i+1) + "."
		v.Set(p+"Name", n)
		v.Set(p+"Value.DataType", "String")
		v.Set(p+"Value.StringValue", attrs[n])
	}
	var out struct {
		MessageID string `xml:"PublishResult>MessageId"`
	}
	err := s.sns(ctx, v, &out)
	return out.MessageID, err
}

// sns posts one query-API action and decodes the XML answer into out.
func (s *Server) sns(ctx context.Context, v url.Values, out any) error {
	v.Set("Version", "2010-03-31")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Endpoint+"/", strings.NewReader(v.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{Timeout: readyTimeout}).Do(req)
	if err != nil {
		return fmt.Errorf("fauxqstest: SNS %s: %w", v.Get("Action"), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("fauxqstest: SNS %s: %w", v.Get("Action"), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fauxqstest: SNS %s: %s: %s", v.Get("Action"), resp.Status, body)
	}
	if err := xml.Unmarshal(body, out); err != nil {
		return fmt.Errorf("fauxqstest: SNS %s: %w in %s", v.Get("Action"), err, body)
	}
	return nil
}
