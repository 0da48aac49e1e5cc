// Package dependency is how a function reaches a service outside AWS that
// it calls with an API key: the key's secret (NewAPIKey), whose resource
// policy denies secretsmanager:GetSecretValue to all but its readers, the
// function's read of it through its own role (GrantRead, which admits the
// role as a reader; AdmitReaderArn for another), a security group with HTTPS
// out only (NewSecurityGroup), the Secrets Manager endpoint's admission
// every secret reader in the VPC needs (ReadSecretsThrough), and the
// circuit breaker's shared state (BreakerStore) with its CircuitoAbierto
// alarm (NewCircuitOpenedAlarm). docs/design.md#dependency-access.
package dependency

import (
	"strings"
	"sync"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// BreakerStore is where circuit breakers keep their shared state:
// *datastore.Cache (mercadofresco-catalogo). Bind admits fn to it as its own
// user, allowed the keys of the breakers of dependencies only, and sets
// the breaker variables of lambdaapi on fn.
type BreakerStore interface {
	Bind(fn awslambda.Function, dependencies ...string)
}

// APIKeyProps configures NewAPIKey. The Context's DataKey encrypts the
// secret and its RemovalPolicy applies.
type APIKeyProps struct {
	core.Context
	// SecretName is the physical name. Nil lets CloudFormation name it.
	SecretName *string
	// Field, when set, makes the secret {"<Field>": "<key>"} (for a reader
	// that takes a JSON field, an EventBridge connection); else the key is
	// the whole secret.
	Field string
	// Description says whose key it is, its form (a plain string or
	// {"api_key": ...}) and that the placeholder must be replaced.
	Description string
	// Rotation says who issues the key and how it is rotated: the reason
	// of the AwsSolutions-SMG4 acknowledgement (a rotation Lambda cannot
	// mint a third party's keys).
	Rotation string
}

// Names in an API key's resource policy.
const (
	// SidOnlyReaders is the Sid of the Deny of GetSecretValue to every
	// principal but the secret's readers.
	SidOnlyReaders = "SoloSusLectores"
	// readersID is the construct id of the readers' list under the secret.
	readersID = "LectoresConocidos"
)

// Readers is the list of role ARNs a secret's Deny of GetSecretValue
// exempts (DenyAllBut).
type Readers struct {
	constructs.Construct
	secretArn string
	roles     []string
	seen      map[string]bool
}

// apiKeys finds the Go value of an API key's readers list from its
// construct (the jsii runtime hands back the same Go value for the same
// construct).
var (
	mu      sync.Mutex
	apiKeys = map[constructs.IConstruct]*Readers{}
)

// readersOf returns secret's readers list, nil for a secret NewAPIKey did
// not create (the database's, whose readers are its rotation and migration).
func readersOf(secret awssecretsmanager.ISecret) *Readers {
	if secret == nil {
		return nil
	}
	mu.Lock()
	defer mu.Unlock()
	return apiKeys[secret.Node().TryFindChild(jsii.String(readersID))]
}

// Admit exempts the role whose ARN is arn (once, in the order admitted).
func (r *Readers) Admit(arn string) {
	mu.Lock()
	defer mu.Unlock()
	if !r.seen[arn] {
		r.seen[arn] = true
		r.roles = append(r.roles, arn)
	}
}

// condition is the ArnNotEquals block, read at synthesis. With no reader
// it names the secret's ARN, which no principal has: nobody reads.
func (r *Readers) condition() any {
	mu.Lock()
	defer mu.Unlock()
	if len(r.roles) == 0 {
		return map[string]any{"aws:PrincipalArn": []string{r.secretArn}}
	}
	return map[string]any{"aws:PrincipalArn": append([]string(nil), r.roles...)}
}

// DenyAllBut adds to secret's resource policy the statement sid that denies
// secretsmanager:GetSecretValue to every principal whose aws:PrincipalArn
// is not admitted to the returned list: an identity of the account allowed
// GetSecretValue on "*" still cannot read it.
func DenyAllBut(secret awssecretsmanager.Secret, sid string) *Readers {
	r := &Readers{Construct: constructs.NewConstruct(secret, jsii.String(readersID)), secretArn: *secret.SecretArn(), seen: map[string]bool{}}
	secret.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String(sid),
		Effect:     awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("secretsmanager:GetSecretValue"),
		Resources:  jsii.Strings("*"),
		Conditions: &map[string]any{"ArnNotEquals": core.LazyAny(r.condition)},
	}))
	return r
}

// NewAPIKey creates the secret of a third party's API key: 40 random
// characters until an operator puts the real key (put-secret-value). Its
// resource policy (BlockPublicPolicy on) denies secretsmanager:GetSecretValue
// to every principal but its readers (DenyAllBut; GrantRead and
// AdmitReaderArn admit them). Writing a new value (PutSecretValue) is not
// denied.
func NewAPIKey(scope constructs.Construct, id string, props *APIKeyProps) awssecretsmanager.Secret {
	generate := &awssecretsmanager.SecretStringGenerator{PasswordLength: jsii.Number(40), ExcludePunctuation: jsii.Bool(true)}
	if props.Field != "" {
		generate.SecretStringTemplate, generate.GenerateStringKey = jsii.String("{}"), jsii.String(props.Field)
	}
	secret := awssecretsmanager.NewSecret(scope, jsii.String(id), &awssecretsmanager.SecretProps{
		SecretName:           props.SecretName,
		Description:          jsii.String(props.Description),
		EncryptionKey:        core.SecretKey(scope, props.DataKey),
		RemovalPolicy:        observability.RemovalFor(props.RemovalPolicy, observability.Data),
		GenerateSecretString: generate,
	})
	r := DenyAllBut(secret, SidOnlyReaders)
	mu.Lock()
	apiKeys[r.Construct] = r
	mu.Unlock()
	if policy, ok := secret.Node().TryFindChild(jsii.String("Policy")).(awssecretsmanager.ResourcePolicy); ok {
		if cfn, ok := policy.Node().DefaultChild().(awssecretsmanager.CfnResourcePolicy); ok {
			cfn.SetBlockPublicPolicy(jsii.Bool(true))
		}
	}
	core.AcknowledgeNag(secret, true, "AwsSolutions-SMG4", props.Rotation)
	return secret
}

// GrantRead lets grantee read secret, in its own policy only, and decrypt
// it with key through Secrets Manager only (Secret.GrantRead would also
// write the key's policy when the key lives in another stack, making that
// stack depend on this one). A nil key grants no key. For an API key
// (NewAPIKey) it admits grantee's role as a reader, and reports a grantee
// whose principal is not a role.
func GrantRead(secret awssecretsmanager.ISecret, key awskms.IKey, grantee awsiam.IGrantable) {
	if r := readersOf(secret); r != nil {
		role, _ := grantee.GrantPrincipal().(awsiam.IRole)
		if !core.Check(r.Construct, "dependency").If(role == nil, "GrantRead: the reader of %s is not a role: admit its role with AdmitReaderArn", *secret.Node().Path()) {
			r.Admit(*role.RoleArn())
		}
	}
	awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"),
		ResourceArns: jsii.Strings(*secret.SecretArn()),
	})
	core.GrantKey(key, grantee, "secretsmanager", "kms:Decrypt")
}

// AdmitReaderArn admits the role whose ARN is arn as a reader of secret, an
// API key of NewAPIKey, without granting it anything: for a reader whose
// permissions come from elsewhere (CloudFormation's service role, which
// resolves a {{resolve:secretsmanager:...}} reference at deploy). A
// secret NewAPIKey did not create is reported.
func AdmitReaderArn(secret awssecretsmanager.ISecret, arn string) {
	r := readersOf(secret)
	if r == nil {
		core.Check(secret, "dependency").If(true, "AdmitReaderArn: %s is not an API key of dependency.NewAPIKey", *secret.Node().Path())
		return
	}
	if !core.Check(r.Construct, "dependency").If(!*awscdk.Token_IsUnresolved(jsii.String(arn)) && (!strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, ":role/")), "AdmitReaderArn: %q is not the ARN of a role", arn) {
		r.Admit(arn)
	}
}

// NewSecurityGroup creates a security group in vpc that lets HTTPS (443)
// out to anywhere and nothing else (egress describes the rule); the cache
// and the endpoints admit it on their side.
func NewSecurityGroup(scope constructs.Construct, id string, vpc awsec2.IVpc, description, egress string) awsec2.SecurityGroup {
	sg := awsec2.NewSecurityGroup(scope, jsii.String(id), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String(description),
		AllowAllOutbound: jsii.Bool(false),
	})
	sg.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String(egress), nil)
	return sg
}

// AllowHTTPS opens 443 from from to endpoint, from from's side: with the
// endpoint in another stack, the CDK places both rules in from's stack (no
// dependency cycle).
func AllowHTTPS(from awsec2.IConnectable, endpoint awsec2.IConnectable, description string) {
	from.Connections().AllowTo(endpoint, awsec2.Port_Tcp(jsii.Number(443)), jsii.String(description))
}

// ReadSecretsThrough admits from, a secret reader in the VPC, to the
// Secrets Manager endpoint, whose private DNS takes every Secrets Manager
// call of the VPC (docs/design.md#network); a missing endpoint is reported
// to v.
func ReadSecretsThrough(v *core.Problems, from awsec2.IConnectable, endpoint awsec2.IInterfaceVpcEndpoint, reader string) {
	if !v.If(endpoint == nil, "SecretsEndpoint is required: the Secrets Manager endpoint's private DNS takes every call in the VPC, where %s (docs/design.md#network)", reader) {
		AllowHTTPS(from, endpoint, reader)
	}
}

// Metric is the project's metric name of dependency in environment
// (namespace MercadoFresco/Tienda, dimensions Entorno and Dependencia), at
// statistic per minute.
func Metric(environment, dependency, name, statistic string) awscloudwatch.Metric {
	dims := map[string]*string{lambdaapi.DimensionEnvironment: jsii.String(environment), lambdaapi.DimensionDependency: jsii.String(dependency)}
	return observability.Metric(lambdaapi.Namespace, name, dims, statistic, "", awscdk.Duration_Minutes(jsii.Number(1)))
}

// NewCircuitOpenedAlarm alarms when the circuit of dependency opens
// (CircuitoAbierto, Sum > 0 in a minute, emitted only on a transition) in
// the Context's environment, to its alerts topic; description says what an
// open circuit means for the caller and what to check.
func NewCircuitOpenedAlarm(scope constructs.Construct, id string, ctx core.Context, dependency, description string) awscloudwatch.Alarm {
	// The dashboard's Breakers section shows every breaker that has an alarm.
	ctx.Dashboard.Add(observability.Breakers, observability.Graph(observability.GraphProps{
		Title: "breaker " + dependency + ": circuit openings",
		Width: 6,
		Left:  []awscloudwatch.IMetric{Metric(ctx.Environment(), dependency, lambdaapi.MetricBreakerOpened, "Sum")},
	}))
	// Emitted only on a transition: no data is a closed circuit.
	return observability.NewAnyAlarm(scope, id, Metric(ctx.Environment(), dependency, lambdaapi.MetricBreakerOpened, "Sum"), ctx.Alerts, description)
}
