package test

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/stacks"
)

// The app carries no cdk-nag finding, error or warning: everything is either
// compliant or acknowledged next to the resource with a reason.
func TestCdkNagFindsNothingInTheApp(t *testing.T) {
	s := synthApp(t)
	for _, st := range *s.assembly.Stacks() {
		for _, msg := range *st.Messages() {
			data, _ := msg.Entry.Data.(string)
			if strings.Contains(data, "AwsSolutions-") && msg.Level != cxapi.SynthesisMessageLevel_INFO {
				t.Errorf("%s %s: %s", *st.StackName(), msg.Level, data)
			}
		}
	}
}

// Every acknowledgement names its rule and gives a reason a reviewer can
// check: not empty, not a placeholder.
func TestEveryNagSuppressionHasARealReason(t *testing.T) {
	s := synthApp(t)
	count := 0
	for stack, tpl := range s.templates {
		resources, _ := tpl["Resources"].(map[string]any)
		for id, r := range resources {
			meta, _ := r.(map[string]any)["Metadata"].(map[string]any)
			nag, _ := meta["cdk_nag"].(map[string]any)
			rules, _ := nag["rules_to_suppress"].([]any)
			for _, rule := range rules {
				count++
				rm := rule.(map[string]any)
				ruleID, _ := rm["id"].(string)
				reason, _ := rm["reason"].(string)
				lower := strings.ToLower(reason)
				if !strings.HasPrefix(ruleID, "AwsSolutions-") {
					t.Errorf("%s/%s: suppression of %q does not name an AwsSolutions rule", stack, id, ruleID)
				}
				if len(reason) < 40 || strings.Contains(lower, "todo") || strings.Contains(lower, "tbd") {
					t.Errorf("%s/%s: %s suppressed with a reason that explains nothing: %q", stack, id, ruleID, reason)
				}
			}
		}
	}
	t.Logf("%d acknowledged findings, each with its reason", count)
}

// The check is live: non-compliant resources make it fail.
func TestCdkNagFailsOnNonCompliantResources(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("NonCompliant"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("eu-west-1")},
	})
	// A queue with no DLQ, no TLS enforcement and no encryption, and a topic
	// that accepts plain-HTTP publishers.
	awssqs.NewQueue(stack, jsii.String("Plain"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_UNENCRYPTED})
	awssns.NewTopic(stack, jsii.String("Topic"), nil)
	stacks.ApplyNag(app)

	annotations := assertions.Annotations_FromStack(stack)
	for _, rule := range []string{"AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4", "AwsSolutions-SNS3"} {
		errs := annotations.FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String(rule+":")))
		if len(*errs) == 0 {
			t.Errorf("cdk-nag did not report %s on the non-compliant stack", rule)
		}
	}
}
