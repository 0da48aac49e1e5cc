package dlq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/mercadofresco/integration/lambdas/retry"
)

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
