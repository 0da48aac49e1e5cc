package orderflow

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/dependency"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// Names of the signing key's resource policy.
const (
	// SigningKeyName is the SPEC base name of the secret (env suffix added
	// by the stack).
	SigningKeyName = "mercadofresco-firma-pedidos"
	// SigningKeyStatementSid is the Sid of its Deny statement.
	SigningKeyStatementSid = "SoloFirmanteYVerificadores"
	// SigningKeyLength is the generated key's length: 64 characters of
	// [A-Za-z0-9], about 380 random bits (lambdaapi.MinSigningKeyBytes is 32 bytes).
	SigningKeyLength = 64
)

// SigningKeyProps configures NewSigningKey. The Context's DataKey (which
// encrypts the secret) is required; its RemovalPolicy applies.
type SigningKeyProps struct {
	core.Context
	// SecretName is the physical name. Nil lets CloudFormation name it.
	SecretName *string
}

// SigningKey is the secret that holds the charge-signing key
// (lambdas/signing): the outbox publisher signs each PedidoCreado with it,
// the order starter and cobro verify. Its resource policy denies
// secretsmanager:GetSecretValue to every principal but the roles admitted
// (GrantRead, AdmitRoleName), so no other identity of the account, however
// broad its own policy, can read the key and sign a charge
// (docs/design.md#charge-signature).
type SigningKey struct {
	constructs.Construct
	// Secret holds the key: a generated random string, rotated with
	// put-secret-value (verifiers accept AWSCURRENT and AWSPREVIOUS).
	Secret awssecretsmanager.Secret

	readers *dependency.Readers
	dataKey awskms.IKey
}

// NewSigningKey creates the secret and its resource policy.
func NewSigningKey(scope constructs.Construct, id string, props *SigningKeyProps) *SigningKey {
	c, v, props := core.Begin(scope, id, "payment.SigningKey", props)
	k := &SigningKey{Construct: c, dataKey: props.DataKey}
	props.Require(v, core.DataKey)
	k.Secret = awssecretsmanager.NewSecret(c, jsii.String("Secret"), &awssecretsmanager.SecretProps{
		SecretName:    props.SecretName,
		Description:   jsii.String("Charge-signing key (HMAC-SHA256) of the outbox publisher, read only by it, the order starter and cobro. Rotate with put-secret-value of a new random value of at least 32 bytes."),
		EncryptionKey: core.SecretKey(c, props.DataKey),
		RemovalPolicy: observability.RemovalFor(props.RemovalPolicy, observability.Data),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength: jsii.Number(SigningKeyLength), ExcludePunctuation: jsii.Bool(true),
		},
	})
	// Before the resource policy: the acknowledgement is the secret's,
	// not its policy's.
	core.AcknowledgeNag(k.Secret, true, "AwsSolutions-SMG4", "The signing key is rotated by an operator (put-secret-value with a new random value); the starter and cobro accept the AWSCURRENT and AWSPREVIOUS versions, so a rotation drops no order (docs/design.md#charge-signature). A scheduled rotation Lambda would be one more principal able to write the key.")
	k.readers = dependency.DenyAllBut(k.Secret, SigningKeyStatementSid)
	return k
}

// GrantRead lets fn read the key (its role's own policy, and kms:Decrypt
// through Secrets Manager), admits its role in the resource policy, sets
// lambdaapi.EnvSigningSecretARN on it and, for a function in a VPC, admits it to the
// Secrets Manager endpoint (required then). fn must be in this stack or
// one it may reference; a role of a stack that references this one is
// admitted with AdmitRoleName and reads with GrantReadFrom.
func (k *SigningKey) GrantRead(fn awslambda.Function, endpoint awsec2.IInterfaceVpcEndpoint) {
	if core.Check(k.Construct, "payment.SigningKey").If(fn == nil || fn.Role() == nil, "GrantRead: the function or its role is nil") {
		return
	}
	GrantReadFrom(k.Secret, k.dataKey, fn, endpoint)
	k.readers.Admit(*fn.Role().RoleArn())
}

// GrantReadFrom is the reader's half of GrantRead, for a function in a stack
// that references secret's (the secret's stack admits its role by name):
// its read of secret and key, lambdaapi.EnvSigningSecretARN, and the endpoint.
func GrantReadFrom(secret awssecretsmanager.ISecret, key awskms.IKey, fn awslambda.Function, endpoint awsec2.IInterfaceVpcEndpoint) {
	v := core.Check(fn, "payment.SigningKey")
	if v.If(secret == nil, "the signing key's secret is nil") {
		return
	}
	dependency.GrantRead(secret, key, fn)
	fn.AddEnvironment(jsii.String(lambdaapi.EnvSigningSecretARN), secret.SecretArn(), nil)
	if *fn.IsBoundToVpc() {
		dependency.ReadSecretsThrough(v, fn, endpoint, "it reads the charge-signing key")
	}
}

// AdmitRoleName admits the role named name in this account to the resource
// policy: a reader in another stack, which grants its own read
// (dependency.GrantRead) and references this secret.
func (k *SigningKey) AdmitRoleName(name string) {
	if core.Check(k.Construct, "payment.SigningKey").If(name == "" || name[0] == '/' || strings.Contains(name, ":"), "AdmitRoleName: %q is not a role name", name) {
		return
	}
	k.readers.Admit(*awscdk.Stack_Of(k.Construct).FormatArn(&awscdk.ArnComponents{
		Service: jsii.String("iam"), Region: jsii.String(""), Resource: jsii.String("role"), ResourceName: jsii.String(name),
	}))
}
