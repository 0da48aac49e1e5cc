package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
)

// OutboxStack holds the VPC, Aurora PostgreSQL, the RDS Proxy and the outbox
// publisher.
type OutboxStack struct {
	awscdk.Stack
}

// NewOutboxStack creates the outbox stack of shared.Env.
func NewOutboxStack(scope constructs.Construct, shared *Shared) *OutboxStack {
	stack := newStack(scope, shared.Env, "Outbox", "transactional outbox on Aurora PostgreSQL")
	return &OutboxStack{Stack: stack}
}
