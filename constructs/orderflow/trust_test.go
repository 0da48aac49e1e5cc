package orderflow_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/orderflow"
	"github.com/mercadofresco/integration/internal/cdktest"
)

// TestWorkflowRoleTrustsOnlyItsStateMachine: Step Functions may assume the
// workflow's role for mercadofresco-procesar-pedido of this account only,
// not for any state machine of the account.
func TestWorkflowRoleTrustsOnlyItsStateMachine(t *testing.T) {
	f := newFixture(t, orderflow.WorkflowProps{})
	tpl := assertions.Template_FromStack(f.p.Stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Role"), map[string]any{
		"AssumeRolePolicyDocument": map[string]any{
			"Version": "2012-10-17",
			"Statement": []any{map[string]any{
				"Effect": "Allow", "Principal": map[string]any{"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole",
				"Condition": map[string]any{
					"StringEquals": map[string]any{"aws:SourceAccount": cdktest.Account},
					"ArnEquals": map[string]any{"aws:SourceArn": map[string]any{"Fn::Join": []any{"", []any{
						"arn:", map[string]any{"Ref": "AWS::Partition"}, ":states:" + cdktest.Region + ":" + cdktest.Account + ":stateMachine:" + orderflow.StateMachineName,
					}}}},
				},
			}},
		},
	})
}
