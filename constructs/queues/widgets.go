package queues

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"

	"github.com/mercadofresco/integration/constructs/observability"
)

// sqsMetric is an AWS/SQS metric of the queue named name, its maximum
// over 5 minutes.
func sqsMetric(name *string, metric, label string) awscloudwatch.IMetric {
	return observability.Metric("AWS/SQS", metric, map[string]*string{"QueueName": name}, "Maximum", label, nil)
}

// contribute adds the source queue's depth and age of its oldest message
// (against the age alarm's threshold) to the Queues section, and its DLQ's
// depth to the DeadLetters section.
func (q *Queue) contribute(board *observability.Board, ageThreshold float64) {
	if board == nil {
		return
	}
	name := &q.QueueName
	board.Add(observability.Queues, observability.Graph(observability.GraphProps{
		Title:      q.QueueName,
		Left:       []awscloudwatch.IMetric{sqsMetric(name, "ApproximateNumberOfMessagesVisible", "depth")},
		Right:      []awscloudwatch.IMetric{sqsMetric(name, "ApproximateAgeOfOldestMessage", "age of the oldest (s)")},
		RightLines: []*awscloudwatch.HorizontalAnnotation{observability.Ceiling(fmt.Sprintf("age alarm %.0f s", ageThreshold), ageThreshold)},
	}))
	contributeDeadLetter(board, q.DeadLetterQueueName, q.DeadLetterQueue)
}

// contributeDeadLetter adds a DLQ's depth to the DeadLetters section;
// title is its literal name, or "" when CloudFormation names it.
func contributeDeadLetter(board *observability.Board, title string, dlq awssqs.IQueue) {
	if board == nil {
		return
	}
	name := dlq.QueueName()
	if title != "" {
		name = &title
	} else {
		title = *dlq.Node().Path()
	}
	board.Add(observability.DeadLetters, observability.Graph(observability.GraphProps{
		Title:     title,
		Width:     6,
		Left:      []awscloudwatch.IMetric{sqsMetric(name, "ApproximateNumberOfMessagesVisible", "messages")},
		LeftLines: []*awscloudwatch.HorizontalAnnotation{observability.Ceiling("alarm: any message", 0)},
	}))
}
