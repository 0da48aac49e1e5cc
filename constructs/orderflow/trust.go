package orderflow

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// pinTrust makes the state machine's role assumable by Step Functions for
// this state machine only (aws:SourceArn is its ARN, built from its name:
// the role cannot reference the state machine that references it), in this
// account. The CDK's default admits any state machine of the account.
func (w *Workflow) pinTrust(name *string) {
	cfn, ok := w.StateMachine.Role().Node().DefaultChild().(awsiam.CfnRole)
	if !ok {
		return
	}
	stack := awscdk.Stack_Of(w.StateMachine)
	arn := stack.FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("states"), Resource: jsii.String("stateMachine"), ResourceName: name,
		ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	cfn.SetAssumeRolePolicyDocument(map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": "states.amazonaws.com"},
			"Action":    "sts:AssumeRole",
			"Condition": map[string]any{
				"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
				"ArnEquals":    map[string]any{"aws:SourceArn": arn},
			},
		}},
	})
}
