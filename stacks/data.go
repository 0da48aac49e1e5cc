package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
)

// DataStack holds the stateful stores of the consumers (the idempotency
// table mercadofresco-idempotencia).
type DataStack struct {
	awscdk.Stack
}

// NewDataStack creates the data stack of shared.Env.
func NewDataStack(scope constructs.Construct, shared *Shared) *DataStack {
	stack := newStack(scope, shared.Env, "Data", "idempotency table")
	return &DataStack{Stack: stack}
}
