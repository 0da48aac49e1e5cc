// Package keygrant grants the use of a KMS key through one AWS service only:
// the grantee's IAM policy allows the key's actions with the condition
// kms:ViaService = <service>.<region>.amazonaws.com, so the grant serves
// what the service does with the key for the grantee (SQS decrypting a
// message it receives, DynamoDB reading a stream) and never a direct
// kms:Decrypt of ciphertext taken elsewhere.
//
// The data key's own policy (constructs/platform) already admits this
// account's principals only through its services; this is the same limit
// on the grantee's side, named per grant (docs/design.md#data-key).
package keygrant

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// ViaService is the kms:ViaService value of service ("sqs", "dynamodb") in
// the region of scope's stack: "sqs.eu-west-1.amazonaws.com".
func ViaService(scope constructs.IConstruct, service string) string {
	return fmt.Sprintf("%s.%s.amazonaws.com", service, *awscdk.Stack_Of(scope).Region())
}

// Through grants grantee actions on key when the request comes through
// service (kms:ViaService in the key's region), in the grantee's own
// policy. A nil key grants nothing (an unencrypted resource needs no key).
func Through(key awskms.IKey, grantee awsiam.IGrantable, service string, actions ...string) awsiam.Grant {
	if key == nil {
		return awsiam.Grant_Drop(grantee, jsii.String("no key to grant"))
	}
	return awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings(actions...),
		ResourceArns: jsii.Strings(*key.KeyArn()),
		Conditions: &map[string]*map[string]any{
			"StringEquals": {"kms:ViaService": ViaService(key, service)},
		},
	})
}
