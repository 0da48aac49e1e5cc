package core

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

// GrantKey grants grantee actions on key, in grantee's own policy, only for
// requests that come through service (kms:ViaService in the key's region):
// what the service does with the key for the grantee (SQS decrypting a
// message it hands over), never a direct use of the key
// (docs/design.md#data-key). A nil key grants nothing.
func GrantKey(key awskms.IKey, grantee awsiam.IGrantable, service string, actions ...string) awsiam.Grant {
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

// SecretKey is key as an imported reference (by ARN) under scope, for the
// EncryptionKey of a secret: the CDK's Secret appends to the policy of a key
// it may edit a statement of its own (kms:CreateGrant for the account via
// Secrets Manager) without kms:GrantIsForAWSResource, while the key's policy
// already admits Secrets Manager with that condition
// (docs/design.md#data-key). A nil key is nil.
func SecretKey(scope constructs.Construct, key awskms.IKey) awskms.IKey {
	if key == nil {
		return nil
	}
	if k, ok := scope.Node().TryFindChild(jsii.String("SecretKey")).(awskms.IKey); ok {
		return k
	}
	return awskms.Key_FromKeyArn(scope, jsii.String("SecretKey"), key.KeyArn())
}
