package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
)

// AdminSDK is the subset of *sqs.Client that AdminClient uses.
type AdminSDK interface {
	SDK
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	CancelMessageMoveTask(ctx context.Context, in *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
}

// AdminClient implements AdminAPI over the aws-sdk-go-v2 SQS client.
type AdminClient struct {
	*Client
	admin AdminSDK
}

var _ AdminAPI = (*AdminClient)(nil)

// NewAdmin returns an AdminClient over sdk (normally *sqs.Client).
func NewAdmin(sdk AdminSDK) *AdminClient { return &AdminClient{Client: New(sdk), admin: sdk} }

// GetQueueURL implements Locator.
func (c *AdminClient) GetQueueURL(ctx context.Context, name string) (string, error) {
	out, err := c.admin.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", mapAdminError("GetQueueUrl", err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// ListDeadLetterSourceQueues implements Locator (all pages).
func (c *AdminClient) ListDeadLetterSourceQueues(ctx context.Context, dlqURL string) ([]string, error) {
	var urls []string
	p := sqs.NewListDeadLetterSourceQueuesPaginator(c.admin, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlqURL)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, mapAdminError("ListDeadLetterSourceQueues", err)
		}
		urls = append(urls, out.QueueUrls...)
	}
	return urls, nil
}

// StartMessageMoveTask implements MoveTasker.
func (c *AdminClient) StartMessageMoveTask(ctx context.Context, in *StartMoveTaskInput) (string, error) {
	if in.MaxPerSecond < 0 || in.MaxPerSecond > MaxMoveRate {
		return "", fmt.Errorf("%w: MaxNumberOfMessagesPerSecond %d not in 1..%d", ErrInvalidParameter, in.MaxPerSecond, MaxMoveRate)
	}
	req := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(in.SourceARN)}
	if in.DestinationARN != "" {
		req.DestinationArn = aws.String(in.DestinationARN)
	}
	if in.MaxPerSecond > 0 {
		req.MaxNumberOfMessagesPerSecond = aws.Int32(int32(in.MaxPerSecond))
	}
	out, err := c.admin.StartMessageMoveTask(ctx, req)
	if err != nil {
		return "", mapAdminError("StartMessageMoveTask", err)
	}
	return aws.ToString(out.TaskHandle), nil
}

// ListMessageMoveTasks implements MoveTasker.
func (c *AdminClient) ListMessageMoveTasks(ctx context.Context, sourceARN string, max int) ([]MoveTask, error) {
	max = cmp.Or(max, 1)
	if max < 1 || max > 10 {
		return nil, fmt.Errorf("%w: MaxResults %d not in 1..10", ErrInvalidParameter, max)
	}
	out, err := c.admin.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(sourceARN), MaxResults: aws.Int32(int32(max))})
	if err != nil {
		return nil, mapAdminError("ListMessageMoveTasks", err)
	}
	tasks := make([]MoveTask, 0, len(out.Results))
	for _, r := range out.Results {
		t := MoveTask{
			TaskHandle:     aws.ToString(r.TaskHandle),
			Status:         aws.ToString(r.Status),
			SourceARN:      aws.ToString(r.SourceArn),
			DestinationARN: aws.ToString(r.DestinationArn),
			MaxPerSecond:   int(aws.ToInt32(r.MaxNumberOfMessagesPerSecond)),
			Moved:          r.ApproximateNumberOfMessagesMoved,
			ToMove:         -1,
			FailureReason:  aws.ToString(r.FailureReason),
			Started:        time.UnixMilli(r.StartedTimestamp),
		}
		if r.ApproximateNumberOfMessagesToMove != nil {
			t.ToMove = *r.ApproximateNumberOfMessagesToMove
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// CancelMessageMoveTask implements MoveTasker.
func (c *AdminClient) CancelMessageMoveTask(ctx context.Context, taskHandle string) (int64, error) {
	out, err := c.admin.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(taskHandle)})
	if err != nil {
		return 0, mapAdminError("CancelMessageMoveTask", err)
	}
	return out.ApproximateNumberOfMessagesMoved, nil
}

// mapAdminError adds the operator sentinels to mapError's: a running move task, a source that is not a
// DLQ, an unknown task.
func mapAdminError(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		code, msg := api.ErrorCode(), strings.ToLower(api.ErrorMessage())
		switch {
		case op == "StartMessageMoveTask" && strings.Contains(msg, "already") && strings.Contains(msg, "task"):
			return fmt.Errorf("queue: %s: %w: %w", op, ErrMoveTaskRunning, err)
		case op == "StartMessageMoveTask" && (strings.Contains(msg, "dead-letter") || strings.Contains(msg, "dead letter")):
			return fmt.Errorf("queue: %s: %w: %w", op, ErrNotDeadLetterQueue, err)
		case code == "ResourceNotFoundException" && op == "CancelMessageMoveTask":
			return fmt.Errorf("queue: %s: %w: %w", op, ErrTaskNotFound, err)
		case code == "ResourceNotFoundException":
			return fmt.Errorf("queue: %s: %w: %w", op, ErrQueueNotFound, err)
		}
	}
	return mapError(op, err)
}
