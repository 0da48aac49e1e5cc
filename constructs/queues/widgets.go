package queues

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"

	"github.com/mercadofresco/integration/constructs/observability"
)

// contribute adds the source queue's depth and age of its oldest message
// (against the age alarm's threshold) to the Queues section, and its DLQ's
// depth to the DeadLetters section.
func (q *Queue) contribute(board *observability.Board, ageThreshold float64) {
	if board == nil {
		return
	}
	board.Add(observability.Queues, observability.Queue(q.QueueName, &q.QueueName, observability.Ceiling(fmt.Sprintf("age alarm %.0f s", ageThreshold), ageThreshold)))
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
		Left:      []awscloudwatch.IMetric{observability.Metric("AWS/SQS", "ApproximateNumberOfMessagesVisible", map[string]*string{"QueueName": name}, "Maximum", "messages", nil)},
		LeftLines: []*awscloudwatch.HorizontalAnnotation{observability.Ceiling("alarm: any message", 0)},
	}))
}
