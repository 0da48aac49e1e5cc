package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
)

// MessagingStack holds the queues, the fan-out topic and the consumers.
type MessagingStack struct {
	awscdk.Stack
}

// NewMessagingStack creates the messaging stack of shared.Env.
func NewMessagingStack(scope constructs.Construct, shared *Shared, data *DataStack) *MessagingStack {
	stack := newStack(scope, shared.Env, "Messaging", "queues, fan-out and consumers")
	return &MessagingStack{Stack: stack}
}
