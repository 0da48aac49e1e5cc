// Package golambda is the project's Go Lambda construct: the CDK's GoFunction
// (aws-lambda-go-alpha) has no Go module, so this one compiles the function
// itself (gobuild.Builder) and hands the CDK the built binary as the asset.
//
// Every function it makes runs `bootstrap` on provided.al2023/arm64. The
// asset hash is the SHA-256 of the built binary, and the binary is
// reproducible, so `cdk diff` shows a function as changed only when its
// binary changed. A compilation error stops the synthesis with the
// compiler's message.
//
// Every function has JSON logs (INFO and up) in a dedicated log group with
// a retention, X-Ray active tracing and a role of its own that can write
// only to that log group (no managed policies); 256 MB and a 30 s timeout
// unless Props says otherwise.
package golambda

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// Defaults applied when the matching Props field is zero.
const (
	DefaultMemoryMB       = 256
	DefaultTimeoutSeconds = 30
)

// Dependency declares a service a function calls and the environment
// variables whose values multiply into the attempts of ONE invocation on
// it: for an HTTP dependency through lambdas/retry, "<DEP>_MAX_ATTEMPTS";
// for an AWS service, lambdaapi.EnvSDKMaxAttempts (times any loop of the function's
// own, named by its variable). See docs/CONVENTIONS.md (retry layers).
type Dependency struct {
	// Name of the dependency as the attempts report shows it: "pasarela",
	// "dynamodb:mercadofresco-idempotencia", "states:StartExecution".
	Name string `json:"name"`
	// AttemptsEnv are the variables (set in Environment) whose product is
	// the attempts per invocation.
	AttemptsEnv []string `json:"attemptsEnv"`
	// PerWorkItem says the product bounds the attempts per unit of work
	// across invocations (a counter kept with the work item, like the outbox
	// row's intentos), so retried invocations do not multiply it.
	PerWorkItem bool `json:"perWorkItem,omitempty"`
}

// Props configures a Function. Only Entry is required. Of the Context it
// reads the Builder (share the app's; nil: a Builder of this function's
// own, whose build directory is removed as soon as the binary is in the
// asset), the DataKey (the variables and the log group; nil: AWS-owned
// keys), LogRetention and RemovalPolicy (of the log group), Alerts (an
// Errors > 0 and a Throttles > 0 alarm; nil: none) and the Dashboard (the
// function's widget: errors, throttles and concurrency against its
// ceiling).
type Props struct {
	core.Context
	// Entry is the directory of the function's main package, relative to the
	// module root (e.g. "lambdas/preparar-pedido").
	Entry string
	// FunctionName is the physical name. Nil lets CloudFormation name it.
	FunctionName *string
	// Description of the function.
	Description *string
	// MemorySize in MB. Zero means DefaultMemoryMB.
	MemorySize float64
	// Timeout of one invocation. Nil means DefaultTimeoutSeconds. Consumers
	// derive queue visibility timeouts from it, so set it to the real worst
	// case (dependency timeouts included), not to a round number.
	Timeout awscdk.Duration
	// Environment variables.
	Environment map[string]*string
	// ReservedConcurrentExecutions caps the function's concurrency. Nil
	// means unreserved.
	ReservedConcurrentExecutions *float64
	// Vpc places the function in a VPC; VpcSubnets and SecurityGroups refine
	// the placement.
	Vpc            awsec2.IVpc
	VpcSubnets     *awsec2.SubnetSelection
	SecurityGroups *[]awsec2.ISecurityGroup
	// SDKMaxAttempts is the AWS SDK's attempts per call
	// (lambdaapi.EnvSDKMaxAttempts, set on every function so that the
	// attempts guardrail reads the number the code runs with). Zero means
	// lambdaapi.SDKMaxAttempts. An AWS_MAX_ATTEMPTS in Environment
	// takes precedence.
	SDKMaxAttempts float64
	// Dependencies the function calls, for the attempts guardrail. A
	// variable "<DEP>_MAX_ATTEMPTS" in Environment that no declaration
	// names is a dependency of its own ("<dep>"), and AWS_MAX_ATTEMPTS
	// alone stands for "aws" when no declaration uses it.
	Dependencies []Dependency
}

// Function is a Go Lambda function with its log group and role.
type Function struct {
	constructs.Construct
	// Function is the underlying L2 function.
	Function awslambda.Function
	// LogGroup receives the function's JSON logs.
	LogGroup awslogs.LogGroup
	// Role is the execution role (no managed policies attached).
	Role awsiam.Role
	// Timeout is the resolved invocation timeout.
	Timeout awscdk.Duration
	// Entry is the main package directory the function was built from.
	Entry string
	// ErrorsAlarm and ThrottlesAlarm exist when Props.Alerts was set.
	ErrorsAlarm, ThrottlesAlarm awscloudwatch.Alarm
}

// NewFunction defines a Go Lambda function. Invalid props or a failed build
// are reported as synthesis errors on the construct (the synth stops with the
// message) rather than as a panic.
func NewFunction(scope constructs.Construct, id string, props *Props) *Function {
	if props == nil {
		props = &Props{}
	}
	this := constructs.NewConstruct(scope, jsii.String(id))
	f := &Function{Construct: this, Entry: props.Entry}

	memory := cmp.Or(props.MemorySize, DefaultMemoryMB)
	f.Timeout = cmp.Or(props.Timeout, awscdk.Duration_Seconds(jsii.Number(DefaultTimeoutSeconds)))
	builder, ownBuilder := props.Builder, false
	if builder == nil {
		builder, ownBuilder = &gobuild.Builder{}, true
	}
	f.LogGroup = props.LogGroup(this, "Logs", nil)

	// A role of our own: the CDK's default attaches AWSLambdaBasicExecutionRole
	// (logs on every group in the account) and, in a VPC,
	// AWSLambdaVPCAccessExecutionRole. Least privilege is this log group only.
	f.Role = awsiam.NewRole(this, jsii.String("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String(fmt.Sprintf("Execution role of %s", props.Entry)),
	})
	f.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*f.LogGroup.LogGroupArn() + ":*"),
	}))
	// The statements that need Resource "*" live in policies of their own,
	// so each acknowledgement covers exactly them (never a later grant in
	// the default policy).
	var wildcard []awsiam.Policy
	if props.Vpc != nil {
		wildcard = append(wildcard, eniPolicy(this, f.Role))
	}
	// X-Ray's PutTraceSegments/PutTelemetryRecords support no
	// resource-level permissions. Added here rather than by the L2's
	// Tracing prop, which puts them in the default policy.
	wildcard = append(wildcard, awsiam.NewPolicy(this, jsii.String("Trazas"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{f.Role},
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("xray:PutTraceSegments", "xray:PutTelemetryRecords"),
			Resources: jsii.Strings("*"),
		})},
	}))

	envVars := map[string]*string{}
	for k, v := range props.Environment {
		envVars[k] = v
	}
	if _, set := envVars[lambdaapi.EnvSDKMaxAttempts]; !set {
		attempts := cmp.Or(props.SDKMaxAttempts, lambdaapi.SDKMaxAttempts)
		envVars[lambdaapi.EnvSDKMaxAttempts] = jsii.String(fmt.Sprint(attempts))
	}
	for _, d := range props.Dependencies {
		for _, e := range d.AttemptsEnv {
			if _, ok := envVars[e]; !ok {
				awscdk.Annotations_Of(this).AddError(jsii.String(fmt.Sprintf("golambda %s: dependency %q counts its attempts with %s, which is not in Environment (the attempts guardrail needs the number)", props.Entry, d.Name, e)))
			}
		}
	}

	code, buildErr := functionCode(this, builder, props.Entry)
	f.Function = awslambda.NewFunction(this, jsii.String("Function"), &awslambda.FunctionProps{
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         code,
		FunctionName:                 props.FunctionName,
		Description:                  props.Description,
		MemorySize:                   jsii.Number(memory),
		Timeout:                      f.Timeout,
		Environment:                  environment(envVars),
		EnvironmentEncryption:        props.DataKey,
		LogGroup:                     f.LogGroup,
		LoggingFormat:                awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2:        awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:             awslambda.SystemLogLevel_WARN,
		Role:                         f.Role,
		ReservedConcurrentExecutions: props.ReservedConcurrentExecutions,
		Vpc:                          props.Vpc,
		VpcSubnets:                   props.VpcSubnets,
		SecurityGroups:               props.SecurityGroups,
	})
	if ownBuilder {
		// The asset is staged (copied into the assembly) by now, and nothing
		// else reuses this builder.
		buildErr = errors.Join(buildErr, builder.Close())
	}
	if buildErr != nil {
		awscdk.Annotations_Of(this).AddError(jsii.String(buildErr.Error()))
	}
	// Names the function's code in the template, so reviews and snapshots
	// (internal/snapshot) can say which function's binary changed.
	cfnFn := f.Function.Node().DefaultChild().(awslambda.CfnFunction)
	cfnFn.AddMetadata(jsii.String(synthesized.MetadataEntry), props.Entry)
	if len(props.Dependencies) > 0 {
		// The declarations' JSON form (Dependency's field tags); strings,
		// booleans and lists cannot fail to encode.
		raw, _ := json.Marshal(props.Dependencies)
		var deps []any
		_ = json.Unmarshal(raw, &deps)
		cfnFn.AddMetadata(jsii.String(synthesized.MetadataDependencies), deps)
	}
	cfnFn.SetTracingConfig(&awslambda.CfnFunction_TracingConfigProperty{Mode: jsii.String("Active")})
	for _, pol := range wildcard {
		// Lambda checks the ENI permissions when it creates the function.
		f.Function.Node().AddDependency(pol)
		reason := "X-Ray PutTraceSegments/PutTelemetryRecords have no resource-level permissions, so AWS requires Resource '*'; this policy holds nothing else."
		if *pol.Node().Id() == "Red" {
			reason = "Lambda's VPC ENI management (ec2:*NetworkInterface*, DescribeSubnets, the actions of AWSLambdaVPCAccessExecutionRole) needs Resource '*' (Lambda checks them unscoped when it creates the function); the same policy denies them to the function's own code (lambda:SourceFunctionArn present), and holds nothing else."
		}
		core.AcknowledgeNag(pol, false, "AwsSolutions-IAM5", reason, "Resource::*")
	}
	// The log-stream wildcard is the log group's own ARN plus ":*", which is
	// how CloudWatch Logs names the streams of one group. On the default
	// policy only, and only for that ARN.
	if pol, ok := f.Role.Node().TryFindChild(jsii.String("DefaultPolicy")).(awsiam.Policy); ok {
		core.AcknowledgeNag(pol, false, "AwsSolutions-IAM5", "logs:CreateLogStream/PutLogEvents are scoped to this function's own log group; ':*' addresses its streams, whose names Lambda generates.", "Resource::<"+core.LogicalID(f.LogGroup)+".Arn>:*")
	}

	if props.Alerts != nil {
		f.addAlarms(props.Alerts)
	}
	f.contribute(props.Dashboard, props.FunctionName, props.ReservedConcurrentExecutions)
	return f
}

// ENIActions are the EC2 actions Lambda uses to manage a VPC function's
// network interfaces.
var ENIActions = []string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
	"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"}

// eniPolicy lets Lambda manage the function's network interfaces, and
// denies the same actions to the function's code. Lambda's own ENI calls
// carry no lambda:SourceFunctionArn; every AWS call made from inside the
// execution environment does (AWS Lambda developer guide, "Using source
// function ARN to control function access behavior"), so a compromised
// function cannot create, move or delete network interfaces with its role.
// EC2's Describe actions support no resource-level permissions, and Lambda
// validates the others unscoped when it creates the function: Resource "*".
func eniPolicy(scope constructs.Construct, role awsiam.IRole) awsiam.Policy {
	return awsiam.NewPolicy(scope, jsii.String("Red"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{role},
		Statements: &[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings(ENIActions...),
				Resources: jsii.Strings("*"),
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("NoENIFromFunctionCode"),
				Effect:    awsiam.Effect_DENY,
				Actions:   jsii.Strings(ENIActions...),
				Resources: jsii.Strings("*"),
				Conditions: &map[string]interface{}{
					"Null": map[string]interface{}{"lambda:SourceFunctionArn": "false"},
				},
			}),
		},
	})
}

// entryDir is the asset source directory. Its content is not what is
// deployed (the bundler's output is); it only has to exist, so an invalid
// entry falls back to the module root and the bundler reports the problem.
func entryDir(b *gobuild.Builder, entry string) string {
	root, err := b.Root()
	if err != nil {
		return "."
	}
	dir := filepath.Join(root, entry)
	if st, err := os.Stat(dir); entry == "" || err != nil || !st.IsDir() || !strings.HasPrefix(dir, root+string(filepath.Separator)) {
		return root
	}
	return dir
}

func (f *Function) addAlarms(topic awssns.ITopic) {
	f.ErrorsAlarm = observability.NewAnyAlarm(f.Construct, "ErrorsAlarm", f.Function.MetricErrors(observability.Per5Min("Sum")), topic,
		fmt.Sprintf("%s: invocations ended in an error (unhandled error or timeout).", f.Entry))
	f.ThrottlesAlarm = observability.NewAnyAlarm(f.Construct, "ThrottlesAlarm", f.Function.MetricThrottles(observability.Per5Min("Sum")), topic,
		fmt.Sprintf("%s: invocations throttled (concurrency ceiling reached).", f.Entry))
}

// functionCode is the function's code asset: the directory holding the
// built bootstrap, hashed by the binary's SHA-256 (so the CDK neither runs a
// bundler nor reads the binary to hash it). For a stack the CDK is told not
// to bundle (the aws:cdk:bundling-stacks context), nothing is built: the
// CDK's own bundling options, which it then skips, give the asset the
// placeholder hash it gives any skipped bundle. A failed build yields the
// Builder's BUILD-FAILED asset and the error, which NewFunction reports.
func functionCode(scope constructs.Construct, builder *gobuild.Builder, entry string) (awslambda.Code, error) {
	if !*awscdk.Stack_Of(scope).BundlingRequired() {
		return awslambda.Code_FromAsset(jsii.String(entryDir(builder, entry)), &awss3assets.AssetOptions{
			AssetHashType: awscdk.AssetHashType_OUTPUT,
			Bundling: &awscdk.BundlingOptions{
				// Never run: bundling is skipped for this stack. Docker is not
				// a dependency of this project.
				Image: awscdk.DockerImage_FromRegistry(jsii.String("mercadofresco/golambda-local-only")),
			},
		}), nil
	}
	dir, sum, err := builder.Asset(context.Background(), entry)
	switch {
	case dir == "":
		dir = entryDir(builder, entry) // no marker could be written: the error still stops the synthesis
	case err == nil:
		prestage(scope, dir, sum)
	}
	return awslambda.Code_FromAsset(jsii.String(dir), &awss3assets.AssetOptions{
		AssetHashType: awscdk.AssetHashType_CUSTOM,
		AssetHash:     jsii.String(sum),
	}), err
}

// prestage puts the binary where the CDK stages this asset,
// <assembly>/asset.<SHA-256 of the custom hash>, through a temporary name
// renamed into place. The CDK copies a directory asset file by file and
// skips one whose directory exists, so a synthesis interrupted mid-copy
// would leave a truncated binary that the next one reuses. When the CDK
// names its staging otherwise, or staging is disabled, the CDK does its own
// copy as before (TestAssetIsStagedWhole checks the naming).
func prestage(scope constructs.Construct, dir, sum string) {
	if off, _ := scope.Node().TryGetContext(jsii.String("aws:cdk:disable-asset-staging")).(bool); off {
		return
	}
	outdir := awscdk.Stage_Of(scope).AssetOutdir()
	if outdir == nil {
		return
	}
	h := sha256.Sum256([]byte(sum))
	gobuild.Store(*outdir, "asset."+hex.EncodeToString(h[:]), dir)
}

// environment passes nil rather than a pointer to an empty map, so a function
// without variables has no Environment block in its template.
func environment(vars map[string]*string) *map[string]*string {
	if len(vars) == 0 {
		return nil
	}
	return &vars
}
