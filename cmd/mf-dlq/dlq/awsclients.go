package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/mercadofresco/integration/lambdas/retry"
)

// SQS is the part of *sqs.Client the runbook uses.
type SQS interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, in *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
}

// MaxMoveRate is the highest MaxNumberOfMessagesPerSecond SQS accepts.
const MaxMoveRate = 500

// The SQS answers the runbook tells apart (exit codes, next steps).
var (
	ErrQueueNotFound      = errors.New("the queue does not exist")
	ErrMoveTaskRunning    = errors.New("a message move task is already running for this queue")
	ErrNotDeadLetterQueue = errors.New("the queue is not the dead-letter queue of any SQS queue")
	ErrTaskNotFound       = errors.New("message move task not found or not running")
)

// sqsError wraps an error of the SQS action op with the sentinel it means
// (ErrPermission for a denied action, naming it).
func sqsError(op string, err error) error {
	var api smithy.APIError
	if err == nil || !errors.As(err, &api) {
		return awsError("sqs:"+op, err)
	}
	code, msg := strings.TrimPrefix(api.ErrorCode(), "AWS.SimpleQueueService."), strings.ToLower(api.ErrorMessage())
	var sentinel error
	switch {
	case op == "StartMessageMoveTask" && strings.Contains(msg, "already") && strings.Contains(msg, "task"):
		sentinel = ErrMoveTaskRunning
	case op == "StartMessageMoveTask" && (strings.Contains(msg, "dead-letter") || strings.Contains(msg, "dead letter")):
		sentinel = ErrNotDeadLetterQueue
	case code == "ResourceNotFoundException" && op == "CancelMessageMoveTask":
		sentinel = ErrTaskNotFound
	case code == "ResourceNotFoundException", code == "QueueDoesNotExist", code == "NonExistentQueue":
		sentinel = ErrQueueNotFound
	default:
		return awsError("sqs:"+op, err)
	}
	return fmt.Errorf("sqs:%s: %w: %w", op, sentinel, err)
}

// allAttributes asks ReceiveMessage for every system and message attribute:
// the runbook reads them all.
func allAttributes(in *sqs.ReceiveMessageInput) *sqs.ReceiveMessageInput {
	in.MessageSystemAttributeNames = []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}
	in.MessageAttributeNames = []string{"All"}
	return in
}

func (t *Tool) queueURL(ctx context.Context, name string) (string, error) {
	out, err := t.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if err != nil {
		return "", sqsError("GetQueueUrl", err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// queueAttributes reads the attributes names (all of them without names).
func (t *Tool) queueAttributes(ctx context.Context, url string, names ...types.QueueAttributeName) (map[string]string, error) {
	if len(names) == 0 {
		names = []types.QueueAttributeName{types.QueueAttributeNameAll}
	}
	out, err := t.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: names})
	if err != nil {
		return nil, sqsError("GetQueueAttributes", err)
	}
	return out.Attributes, nil
}

// deadLetterSources returns the URLs of the queues that dead-letter into
// dlqURL (all pages).
func (t *Tool) deadLetterSources(ctx context.Context, dlqURL string) ([]string, error) {
	var urls []string
	p := sqs.NewListDeadLetterSourceQueuesPaginator(t.SQS, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: &dlqURL})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, sqsError("ListDeadLetterSourceQueues", err)
		}
		urls = append(urls, out.QueueUrls...)
	}
	return urls, nil
}

// moveTasks returns the latest max move tasks of the queue sourceARN.
func (t *Tool) moveTasks(ctx context.Context, sourceARN string, max int32) ([]types.ListMessageMoveTasksResultEntry, error) {
	out, err := t.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: &sourceARN, MaxResults: &max})
	if err != nil {
		return nil, sqsError("ListMessageMoveTasks", err)
	}
	return out.Results, nil
}

// activeTask reports whether a move task still holds its queue's one slot.
func activeTask(tk types.ListMessageMoveTasksResultEntry) bool {
	s := aws.ToString(tk.Status)
	return s == "RUNNING" || s == "CANCELLING"
}

// queueName returns the name in an SQS queue ARN.
func queueName(queueARN string) (string, error) {
	a, err := arn.Parse(queueARN)
	if err != nil || a.Service != "sqs" || a.Resource == "" {
		return "", fmt.Errorf("%q is not an SQS queue ARN", queueARN)
	}
	return a.Resource, nil
}

// LambdaAPI is the part of *lambda.Client that LambdaMappings uses.
type LambdaAPI interface {
	ListEventSourceMappings(ctx context.Context, in *lambda.ListEventSourceMappingsInput, optFns ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error)
	UpdateEventSourceMapping(ctx context.Context, in *lambda.UpdateEventSourceMappingInput, optFns ...func(*lambda.Options)) (*lambda.UpdateEventSourceMappingOutput, error)
}

// LambdaMappings implements EventSources over the Lambda API.
type LambdaMappings struct{ API LambdaAPI }

// ListEventSourceMappings implements EventSources.
func (l LambdaMappings) ListEventSourceMappings(ctx context.Context, queueARN string) ([]EventSourceMapping, error) {
	var out []EventSourceMapping
	p := lambda.NewListEventSourceMappingsPaginator(l.API, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(queueARN)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, awsError("lambda:ListEventSourceMappings", err)
		}
		for _, m := range page.EventSourceMappings {
			out = append(out, mapping(m.UUID, m.FunctionArn, m.State, m.BatchSize, m.ScalingConfig))
		}
	}
	return out, nil
}

// SetEventSourceMappingEnabled implements EventSources.
func (l LambdaMappings) SetEventSourceMappingEnabled(ctx context.Context, uuid string, enabled bool) (EventSourceMapping, error) {
	m, err := l.API.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{UUID: aws.String(uuid), Enabled: aws.Bool(enabled)})
	if err != nil {
		return EventSourceMapping{}, awsError("lambda:UpdateEventSourceMapping", err)
	}
	return mapping(m.UUID, m.FunctionArn, m.State, m.BatchSize, m.ScalingConfig), nil
}

func mapping(uuid, fn, state *string, batch *int32, sc *lambdatypes.ScalingConfig) EventSourceMapping {
	m := EventSourceMapping{UUID: aws.ToString(uuid), FunctionARN: aws.ToString(fn), State: aws.ToString(state), BatchSize: int(aws.ToInt32(batch))}
	if sc != nil {
		m.MaximumConcurrency = int(aws.ToInt32(sc.MaximumConcurrency))
	}
	return m
}

// CloudWatchAPI is the part of *cloudwatch.Client that CloudWatchMetrics uses.
type CloudWatchAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// CloudWatchMetrics implements Metrics over CloudWatch (namespace AWS/SQS,
// one-minute periods).
type CloudWatchMetrics struct {
	API   CloudWatchAPI
	Clock retry.Clock
}

// OldestMessageAge implements Metrics.
func (c CloudWatchMetrics) OldestMessageAge(ctx context.Context, queueName string, lookback time.Duration) (time.Duration, time.Time, bool, error) {
	now := c.Clock.Now()
	ts, vs, err := c.series(ctx, queueName, "ApproximateAgeOfOldestMessage", cwtypes.StatisticMaximum, now.Add(-lookback), now)
	if err != nil || len(vs) == 0 {
		return 0, time.Time{}, false, err
	}
	latest := 0
	for i := range ts {
		if ts[i].After(ts[latest]) {
			latest = i
		}
	}
	return time.Duration(vs[latest] * float64(time.Second)), ts[latest], true, nil
}

// SumDeleted implements Metrics.
func (c CloudWatchMetrics) SumDeleted(ctx context.Context, queueName string, from, to time.Time) (float64, error) {
	_, vs, err := c.series(ctx, queueName, "NumberOfMessagesDeleted", cwtypes.StatisticSum, from, to)
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum, err
}

func (c CloudWatchMetrics) series(ctx context.Context, queueName, metric string, stat cwtypes.Statistic, from, to time.Time) ([]time.Time, []float64, error) {
	in := &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(from.Truncate(time.Minute)),
		EndTime:   aws.Time(to.Truncate(time.Minute).Add(time.Minute)),
		MetricDataQueries: []cwtypes.MetricDataQuery{{
			Id: aws.String("m"),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SQS"), MetricName: aws.String(metric),
					Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(queueName)}}},
				Period: aws.Int32(60),
				Stat:   aws.String(string(stat)),
			},
		}},
	}
	var ts []time.Time
	var vs []float64
	p := cloudwatch.NewGetMetricDataPaginator(c.API, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, awsError("cloudwatch:GetMetricData", err)
		}
		for _, r := range page.MetricDataResults {
			ts = append(ts, r.Timestamps...)
			vs = append(vs, r.Values...)
		}
	}
	return ts, vs, nil
}

// ErrPermission is wrapped around an AWS access-denied error; the message
// names the IAM action to ask for.
var ErrPermission = errors.New("missing permission")

func awsError(action string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "AccessDeniedException", "AccessDenied", "UnauthorizedOperation":
			return fmt.Errorf("%w: the caller lacks %s: %w", ErrPermission, action, err)
		}
	}
	return fmt.Errorf("%s: %w", action, err)
}

// brief shortens an AWS error for a one-line status: the API error code and
// message, or the HTTP status, or the error itself.
func brief(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" && api.ErrorCode() != "InvalidAction" {
		return api.ErrorCode() + ": " + api.ErrorMessage()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("HTTP %d from the endpoint (is the service served there?)", re.HTTPStatusCode())
	}
	return err.Error()
}
