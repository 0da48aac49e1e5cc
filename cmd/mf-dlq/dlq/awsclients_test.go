package dlq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
)

type lambdaSDK struct {
	update *lambda.UpdateEventSourceMappingInput
	err    error
}

func (l *lambdaSDK) ListEventSourceMappings(_ context.Context, in *lambda.ListEventSourceMappingsInput, _ ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error) {
	if l.err != nil {
		return nil, l.err
	}
	return &lambda.ListEventSourceMappingsOutput{EventSourceMappings: []lambdatypes.EventSourceMappingConfiguration{{
		UUID: aws.String("u-1"), FunctionArn: aws.String("arn:fn"), State: aws.String("Enabled"), BatchSize: aws.Int32(10),
		EventSourceArn: in.EventSourceArn, ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(20)},
	}}}, nil
}

func (l *lambdaSDK) UpdateEventSourceMapping(_ context.Context, in *lambda.UpdateEventSourceMappingInput, _ ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error) {
	l.update = in
	return &lambda.UpdateEventSourceMappingOutput{UUID: in.UUID, State: aws.String("Disabling")}, nil
}

func TestLambdaMappings(t *testing.T) {
	sdk := &lambdaSDK{}
	l := dlq.LambdaMappings{API: sdk}
	ms, err := l.ListEventSourceMappings(context.Background(), "arn:aws:sqs:eu-west-1:1:q")
	if err != nil || len(ms) != 1 || ms[0].MaximumConcurrency != 20 || ms[0].UUID != "u-1" {
		t.Fatalf("list = %+v, %v", ms, err)
	}
	m, err := l.SetEventSourceMappingEnabled(context.Background(), "u-1", false)
	if err != nil || m.State != "Disabling" || aws.ToBool(sdk.update.Enabled) || aws.ToString(sdk.update.UUID) != "u-1" {
		t.Fatalf("update = %+v, %v (sent %+v)", m, err, sdk.update)
	}
	sdk.err = &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "no"}
	_, err = l.ListEventSourceMappings(context.Background(), "arn")
	if !errors.Is(err, dlq.ErrPermission) || !strings.Contains(err.Error(), "lambda:ListEventSourceMappings") {
		t.Fatalf("denied: %v", err)
	}
}

type cwSDK struct {
	in *cloudwatch.GetMetricDataInput
}

func (c *cwSDK) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	c.in = in
	return &cloudwatch.GetMetricDataOutput{MetricDataResults: []cwtypes.MetricDataResult{{
		Timestamps: []time.Time{t0.Add(-2 * time.Minute), t0.Add(-time.Minute)}, Values: []float64{120, 60},
	}}}, nil
}

func TestCloudWatchMetrics(t *testing.T) {
	sdk := &cwSDK{}
	m := dlq.CloudWatchMetrics{API: sdk, Clock: fixedClock{}}
	age, at, ok, err := m.OldestMessageAge(context.Background(), "cola", 15*time.Minute)
	if err != nil || !ok || age != time.Minute || !at.Equal(t0.Add(-time.Minute)) {
		t.Fatalf("age = %s at %s ok=%v err=%v", age, at, ok, err)
	}
	q := sdk.in.MetricDataQueries[0].MetricStat
	if aws.ToString(q.Metric.Namespace) != "AWS/SQS" || aws.ToString(q.Metric.MetricName) != "ApproximateAgeOfOldestMessage" ||
		aws.ToString(q.Metric.Dimensions[0].Value) != "cola" || aws.ToString(q.Stat) != "Maximum" {
		t.Errorf("query = %+v", q)
	}
	sum, err := m.SumDeleted(context.Background(), "cola", t0.Add(-time.Hour), t0)
	if err != nil || sum != 180 || aws.ToString(sdk.in.MetricDataQueries[0].MetricStat.Stat) != "Sum" {
		t.Fatalf("sum = %v, %v", sum, err)
	}
}

type fixedClock struct{}

func (fixedClock) Now() time.Time                                   { return t0 }
func (fixedClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

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
