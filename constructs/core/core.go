// Package core is what every construct of the app shares: the platform
// context its Props embed (Context), the validator that reports every
// problem of its props at synthesis (Problems; Begin starts a constructor
// with it), the one way to grant a KMS key through one service only
// (GrantKey), and the construct metadata the checks read: acknowledgements
// (Acknowledge; AcknowledgeNag for cdk-nag's rules), the source of a
// property (SetBy) and the event contracts (Produces, Accepts).
// docs/design.md#construct-props.
package core

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/constructs/observability"
)

// Context is what the platform gives every construct of one environment;
// every construct's Props embed it. Each construct says which fields it
// cannot do without (Require); the zero value of the others is safe.
type Context struct {
	// EnvironmentName is dev, staging or prod: ENTORNO, the Entorno
	// dimension of the project's metrics.
	EnvironmentName string
	// Builder compiles the Go Lambdas: share the app's. Nil: each function
	// builds on its own.
	Builder *gobuild.Builder
	// DataKey is the customer-managed key alias/mercadofresco-datos that
	// encrypts stores, queues, topics, secrets, environments and logs.
	DataKey awskms.IKey
	// Alerts is alertas-mercadofresco: every alarm notifies it of ALARM and OK.
	Alerts awssns.ITopic
	// LogRetention of every log group. Empty means one month.
	LogRetention awslogs.RetentionDays
	// RemovalPolicy of stateful resources, mapped per kind by observability.RemovalFor
	// (empty means RETAIN; SNAPSHOT means RETAIN where CloudFormation
	// cannot snapshot).
	RemovalPolicy awscdk.RemovalPolicy
	// DeletionProtection of tables and databases. Nil means on.
	DeletionProtection *bool
	// Dashboard is the environment's dashboard registry: every construct
	// adds its widgets to it (constructs/observability). Nil: no dashboard.
	Dashboard *observability.Board
}

// Duration is d as a CDK Duration (in seconds): where a Go duration
// constant becomes a Props duration.
func Duration(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}

// LazyAny is a value produce computes at synthesis (awscdk.Lazy_Any): a
// list construct calls may still grow, such as a policy's admitted roles.
func LazyAny(produce func() any) any {
	return awscdk.Lazy_Any(&lazy{produce}, nil)
}

// lazy adapts a function to awscdk.IStableAnyProducer (a pointer: the jsii
// runtime keys the objects it hands Node by their Go value).
type lazy struct{ produce func() any }

func (l *lazy) Produce() any { return l.produce() }

// LogicalID is the logical id of c's default child in its stack's
// template, as cdk-nag names resources in its findings ("missing" for an
// imported construct, which has none).
func LogicalID(c constructs.IConstruct) string {
	if el, ok := c.Node().DefaultChild().(awscdk.CfnElement); ok {
		return *awscdk.Stack_Of(c).GetLogicalId(el)
	}
	return "missing"
}

// Field names a Context field a construct requires.
type Field int

// The fields Require checks.
const (
	EnvironmentName Field = 1 << iota
	DataKey
	Alerts
)

// Require reports every field of need that is missing.
func (c Context) Require(p *Problems, need Field) {
	p.If(need&EnvironmentName != 0 && c.EnvironmentName == "", "EnvironmentName is required (ENTORNO, the Entorno metric dimension)")
	p.If(need&DataKey != 0 && c.DataKey == nil, "DataKey is required (the data key alias/mercadofresco-datos)")
	p.If(need&Alerts != 0 && c.Alerts == nil, "Alerts is required (alertas-mercadofresco): an alarm nobody receives is not an alarm")
}

// Environment is EnvironmentName, or "missing" when it is empty (a metric
// dimension cannot be empty; Require has reported it).
func (c Context) Environment() string {
	if c.EnvironmentName == "" {
		return "missing"
	}
	return c.EnvironmentName
}

// Protected is DeletionProtection, true when nil.
func (c Context) Protected() *bool {
	if c.DeletionProtection == nil {
		return jsii.Bool(true)
	}
	return c.DeletionProtection
}

// LogGroup creates a log group encrypted with the data key, with the
// context's retention (one month when empty) and removal policy. A nil
// name lets CloudFormation name it.
func (c Context) LogGroup(scope constructs.Construct, id string, name *string) awslogs.LogGroup {
	retention := cmp.Or(c.LogRetention, awslogs.RetentionDays_ONE_MONTH)
	return awslogs.NewLogGroup(scope, jsii.String(id), &awslogs.LogGroupProps{
		LogGroupName:  name,
		Retention:     retention,
		EncryptionKey: c.DataKey,
		RemovalPolicy: observability.RemovalFor(c.RemovalPolicy, observability.Data),
	})
}

// RequireVpc returns vpc and subnets, or, reporting the missing vpc (why
// says what needs it), an imported placeholder and its default subnets:
// no stand-in VPC is built and the template gains nothing, while the
// construct stays whole until synthesis fails with every problem.
func RequireVpc(v *Problems, scope constructs.Construct, vpc awsec2.IVpc, subnets *awsec2.SubnetSelection, why string) (awsec2.IVpc, *awsec2.SubnetSelection) {
	if !v.If(vpc == nil, "Vpc is required: %s", why) {
		return vpc, subnets
	}
	return awsec2.Vpc_FromVpcAttributes(scope, jsii.String("MissingVpc"), &awsec2.VpcAttributes{
		VpcId:             jsii.String("vpc-missing"),
		AvailabilityZones: jsii.Strings("missing-a", "missing-b"),
		PrivateSubnetIds:  jsii.Strings("subnet-missing-a", "subnet-missing-b"),
	}), nil
}

// ErrNoDeploymentRole is returned by DeploymentRoleArn for a stack whose
// deployment role it cannot name.
var ErrNoDeploymentRole = errors.New("no deployment role")

// DeploymentRoleArn is the role CloudFormation deploys stack with: the
// CDK bootstrap's execution role its DefaultStackSynthesizer names
// (cdk-<qualifier>-cfn-exec-role-<account>-<region>; the qualifier from
// the context key @aws-cdk/core:bootstrapQualifier). The stack needs an
// explicit account and region, and the synthesizer the stack made itself:
// jsii cannot read the role of a synthesizer created in Go and passed in
// StackProps (that is an error too).
func DeploymentRoleArn(stack awscdk.Stack) (arn string, err error) {
	syn, ok := stack.Synthesizer().(awscdk.DefaultStackSynthesizer)
	if !ok {
		return "", fmt.Errorf("%w: stack %s does not use the DefaultStackSynthesizer", ErrNoDeploymentRole, *stack.StackName())
	}
	defer func() {
		if r := recover(); r != nil {
			arn, err = "", fmt.Errorf("%w: stack %s: %v", ErrNoDeploymentRole, *stack.StackName(), r)
		}
	}()
	raw := *syn.CloudFormationExecutionRoleArn()
	if strings.Contains(raw, "${AWS::AccountId}") || strings.Contains(raw, "${AWS::Region}") || *awscdk.Token_IsUnresolved(jsii.String(raw)) {
		return "", fmt.Errorf("%w: stack %s has no explicit account and region (%s)", ErrNoDeploymentRole, *stack.StackName(), raw)
	}
	if partition := stack.Partition(); !*awscdk.Token_IsUnresolved(partition) {
		return strings.ReplaceAll(raw, "${AWS::Partition}", *partition), nil
	}
	// Without @aws-cdk/core:enablePartitionLiterals the partition is the
	// template's.
	arn = *awscdk.Fn_Sub(jsii.String(raw), nil)
	return arn, nil
}
