package cost

// Layers are the messaging services the design's figure priced, in the
// order the report lists them.
var Layers = []string{"SNS", "EventBridge", "Step Functions", "DynamoDB", "SQS"}
