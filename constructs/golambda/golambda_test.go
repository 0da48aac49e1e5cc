package golambda_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/golambda"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/internal/golambdatest"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// fixture copies gobuild's testdata/fixture (a module with two tiny
// functions) into a temporary directory the test may edit.
func fixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS("gobuild/testdata/fixture")); err != nil {
		t.Fatal(err)
	}
	return dst
}

// assetKeys synthesises a stack with the fixture's two functions and returns
// each function's S3 key (the asset hash).
func assetKeys(t *testing.T, root string) map[string]string {
	t.Helper()
	stack := cdktest.NewStack("Hashes")
	builder := golambdatest.Builder(t, root)
	golambda.NewFunction(stack, "Alpha", &golambda.Props{Entry: "fn/alpha", Context: core.Context{Builder: builder}})
	golambda.NewFunction(stack, "Beta", &golambda.Props{Entry: "fn/beta", Context: core.Context{Builder: builder}})
	tpl := assertions.Template_FromStack(stack, nil)
	keys := map[string]string{}
	for logicalID, res := range *tpl.FindResources(jsii.String("AWS::Lambda::Function"), nil) {
		code := (*res)["Properties"].(map[string]interface{})["Code"].(map[string]interface{})
		name := "beta"
		if strings.HasPrefix(logicalID, "Alpha") {
			name = "alpha"
		}
		keys[name] = code["S3Key"].(string)
	}
	if len(keys) != 2 {
		t.Fatalf("want 2 functions, got %v", keys)
	}
	return keys
}

func TestAssetHashIsTheHashOfTheBinary(t *testing.T) {
	root := fixture(t)
	first := assetKeys(t, root)
	second := assetKeys(t, root)
	if first["alpha"] != second["alpha"] || first["beta"] != second["beta"] {
		t.Fatalf("two synths of unchanged code gave different hashes: %v vs %v", first, second)
	}

	// A comment changes the source but not the binary: the hash must not move.
	alpha := filepath.Join(root, "fn/alpha/main.go")
	src, _ := os.ReadFile(alpha)
	os.WriteFile(alpha, append(src, []byte("\n// a comment does not change the binary\n")...), 0o644)
	commented := assetKeys(t, root)
	if commented["alpha"] != first["alpha"] {
		t.Errorf("a comment-only change moved alpha's hash: %s -> %s", first["alpha"], commented["alpha"])
	}

	// A code change moves only that function's hash.
	os.WriteFile(alpha, []byte(strings.Replace(string(src), "alpha v1", "alpha v2", 1)), 0o644)
	changed := assetKeys(t, root)
	if changed["alpha"] == first["alpha"] {
		t.Errorf("alpha's code changed but its hash did not: %s", first["alpha"])
	}
	if changed["beta"] != first["beta"] {
		t.Errorf("beta did not change but its hash did: %s -> %s", first["beta"], changed["beta"])
	}
}

// The asset the template names is the binary, staged whole under the
// name the CDK gives a custom hash (golambda writes it there itself).
func TestAssetIsStagedWhole(t *testing.T) {
	root := fixture(t)
	builder := golambdatest.Builder(t, root)
	dir, sum, err := builder.Asset(context.Background(), "fn/alpha")
	if err != nil {
		t.Fatal(err)
	}
	stack := cdktest.NewStack("Staged")
	golambda.NewFunction(stack, "Alpha", &golambda.Props{Entry: "fn/alpha", Context: core.Context{Builder: builder}})
	assertions.Template_FromStack(stack, nil).HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"Code": assertions.Match_ObjectLike(&map[string]any{"S3Key": fmt.Sprintf("%x.zip", sha256.Sum256([]byte(sum)))}),
	})
	outdir := *awscdk.Stage_Of(stack).AssetOutdir()
	staged, err := os.ReadFile(filepath.Join(outdir, fmt.Sprintf("asset.%x", sha256.Sum256([]byte(sum))), "bootstrap"))
	built, _ := os.ReadFile(filepath.Join(dir, "bootstrap"))
	if err != nil || !bytes.Equal(staged, built) || len(built) == 0 {
		t.Fatalf("the staged bootstrap (%d bytes, %v) is not the built one (%d bytes)", len(staged), err, len(built))
	}
	if left, _ := filepath.Glob(filepath.Join(outdir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary staging directories left in the assembly: %v", left)
	}
}

func TestBuildFailureStopsSynthWithCompilerMessage(t *testing.T) {
	root := fixture(t)
	os.WriteFile(filepath.Join(root, "fn/alpha/main.go"), []byte("package main\n\nfunc main() { undefinedThing() }\n"), 0o644)
	stack := cdktest.NewStack("Broken")
	golambda.NewFunction(stack, "Alpha", &golambda.Props{Entry: "fn/alpha", Context: core.Context{Builder: golambdatest.Builder(t, root)}})
	errs := assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("undefined: undefinedThing")))
	if len(*errs) != 1 {
		t.Fatalf("want one synthesis error carrying the compiler's message, got %d", len(*errs))
	}
	msg := (*errs)[0].Entry.Data.(string)
	if !strings.Contains(msg, "go build failed for fn/alpha") || !regexp.MustCompile(`main\.go:3:\d+`).MatchString(msg) {
		t.Errorf("error should name the entry and the file position, got: %s", msg)
	}
}

// A stack the CDK is told not to bundle (aws:cdk:bundling-stacks, as the
// operator tools synthesise) builds nothing and reports nothing: its
// builder has no go command, so any build would be a synthesis error.
func TestStackWithoutBundlingBuildsNothing(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"aws:cdk:bundling-stacks": []any{}}})
	stack := awscdk.NewStack(app, jsii.String("Unbundled"), nil)
	builder := &gobuild.Builder{ModuleRoot: fixture(t), GoBinary: filepath.Join(t.TempDir(), "no-go"), CacheDir: "off"}
	t.Cleanup(func() { _ = builder.Close() })
	golambda.NewFunction(stack, "Alpha", &golambda.Props{Entry: "fn/alpha", Context: core.Context{Builder: builder}})
	if errs := assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_AnyValue()); len(*errs) != 0 {
		t.Fatalf("a stack without bundling reported %d errors: %v", len(*errs), (*errs)[0].Entry.Data)
	}
}

func TestInvalidEntryIsASynthesisErrorNotAPanic(t *testing.T) {
	for _, entry := range []string{"", "../outside", "fn/does-not-exist"} {
		t.Run(entry, func(t *testing.T) {
			stack := cdktest.NewStack("Invalid")
			golambda.NewFunction(stack, "Fn", &golambda.Props{Entry: entry, Context: core.Context{Builder: golambdatest.Builder(t, fixture(t))}})
			errs := assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("gobuild: go build failed")))
			if len(*errs) != 1 {
				t.Fatalf("entry %q: want one synthesis error, got %d", entry, len(*errs))
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	stack := cdktest.NewStack("Defaults")
	key := awskms.NewKey(stack, jsii.String("Key"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	golambda.NewFunction(stack, "Alpha", &golambda.Props{
		Entry:   "fn/alpha",
		Context: core.Context{Builder: golambdatest.Builder(t, fixture(t)), DataKey: key},
	})
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
		"Runtime":       "provided.al2023",
		"Architectures": []interface{}{"arm64"},
		"Handler":       "bootstrap",
		"MemorySize":    golambda.DefaultMemoryMB,
		"Timeout":       golambda.DefaultTimeoutSeconds,
		"TracingConfig": map[string]interface{}{"Mode": "Active"},
		"LoggingConfig": map[string]interface{}{
			"LogFormat":           "JSON",
			"ApplicationLogLevel": "INFO",
			"SystemLogLevel":      "WARN",
			"LogGroup":            map[string]interface{}{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^AlphaLogs"))},
		},
		"KmsKeyArn": map[string]interface{}{"Fn::GetAtt": []interface{}{assertions.Match_StringLikeRegexp(jsii.String("^Key")), "Arn"}},
		// The SDK's attempts are stated on every function (retry layers).
		"Environment": map[string]interface{}{"Variables": map[string]interface{}{lambdaapi.EnvSDKMaxAttempts: "2"}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]interface{}{
		"RetentionInDays": 30,
		"KmsKeyId":        map[string]interface{}{"Fn::GetAtt": []interface{}{assertions.Match_StringLikeRegexp(jsii.String("^Key")), "Arn"}},
	})
	// Least privilege: no managed policy, logs only on its own group.
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Role"), map[string]interface{}{
		"ManagedPolicyArns": assertions.Match_Absent(),
	})
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]interface{}{
		"PolicyDocument": map[string]interface{}{"Statement": assertions.Match_ArrayWith(&[]interface{}{
			map[string]interface{}{
				"Action":   []interface{}{"logs:CreateLogStream", "logs:PutLogEvents"},
				"Effect":   "Allow",
				"Resource": map[string]interface{}{"Fn::Join": []interface{}{"", []interface{}{map[string]interface{}{"Fn::GetAtt": []interface{}{assertions.Match_StringLikeRegexp(jsii.String("^AlphaLogs")), "Arn"}}, ":*"}}},
			},
		})},
	})
	tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(0))
}

func TestDependenciesAreDeclaredInTheTemplate(t *testing.T) {
	stack := cdktest.NewStack("Deps")
	golambda.NewFunction(stack, "Alpha", &golambda.Props{
		Entry: "fn/alpha", Context: core.Context{Builder: golambdatest.Builder(t, fixture(t))},
		SDKMaxAttempts: 3,
		Environment:    map[string]*string{"GATEWAY_MAX_ATTEMPTS": jsii.String("3")},
		Dependencies: []golambda.Dependency{
			{Name: "pasarela", AttemptsEnv: []string{"GATEWAY_MAX_ATTEMPTS"}},
			{Name: "dynamodb", AttemptsEnv: []string{lambdaapi.EnvSDKMaxAttempts}},
			{Name: "erp", AttemptsEnv: []string{"ERP_MAX_ATTEMPTS"}},
		},
	})
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.HasResource(jsii.String("AWS::Lambda::Function"), map[string]interface{}{
		"Properties": map[string]interface{}{"Environment": map[string]interface{}{"Variables": map[string]interface{}{
			lambdaapi.EnvSDKMaxAttempts: "3", "GATEWAY_MAX_ATTEMPTS": "3",
		}}},
		"Metadata": assertions.Match_ObjectLike(&map[string]interface{}{synthesized.MetadataDependencies: []interface{}{
			map[string]interface{}{"name": "pasarela", "attemptsEnv": []interface{}{"GATEWAY_MAX_ATTEMPTS"}},
			map[string]interface{}{"name": "dynamodb", "attemptsEnv": []interface{}{lambdaapi.EnvSDKMaxAttempts}},
			map[string]interface{}{"name": "erp", "attemptsEnv": []interface{}{"ERP_MAX_ATTEMPTS"}},
		}}),
	})
	// A declared variable that is not set cannot be counted.
	cdktest.RequireContains(t, cdktest.Errors(stack), `dependency "erp"`, "ERP_MAX_ATTEMPTS", "not in Environment")
}

func TestAlertsAddErrorAndThrottleAlarms(t *testing.T) {
	stack := cdktest.NewStack("Alarms")
	topic := awssns.NewTopic(stack, jsii.String("Topic"), nil)
	golambda.NewFunction(stack, "Alpha", &golambda.Props{Entry: "fn/alpha", Context: core.Context{Builder: golambdatest.Builder(t, fixture(t)), Alerts: topic}})
	tpl := assertions.Template_FromStack(stack, nil)
	tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(2))
	for _, metric := range []string{"Errors", "Throttles"} {
		tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]interface{}{
			"MetricName":       metric,
			"Threshold":        0,
			"TreatMissingData": "notBreaching",
			"AlarmActions":     []interface{}{map[string]interface{}{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^Topic"))}},
			"OKActions":        []interface{}{map[string]interface{}{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^Topic"))}},
		})
	}
}

// The construct's own acknowledgements must leave cdk-nag with nothing to
// report, in and out of a VPC.
func TestCdkNagClean(t *testing.T) {
	stack := cdktest.NewStack("Nag")
	root := fixture(t)
	builder := golambdatest.Builder(t, root)
	golambda.NewFunction(stack, "Plain", &golambda.Props{Entry: "fn/alpha", Context: core.Context{Builder: builder}})
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs:              jsii.Number(2),
		NatGateways:         jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(vpc, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-VPC7"), Reason: jsii.String("Test VPC only hosts the function under test; flow logs are not the subject."),
	}}, jsii.Bool(true))
	golambda.NewFunction(stack, "InVpc", &golambda.Props{Entry: "fn/beta", Context: core.Context{Builder: builder}, Vpc: vpc})
	awscdk.Aspects_Of(stack).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	errs := assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
	for _, e := range *errs {
		t.Errorf("%s: %v", *e.Id, e.Entry.Data)
	}
}

// A VPC function's ENI actions are allowed on "*" (Lambda needs them) and
// denied to the function's own code (lambda:SourceFunctionArn is present
// only on calls from inside the execution environment); X-Ray and ENI
// statements sit in policies of their own, and each "*" acknowledgement is
// on that policy alone, so a later "*" grant in the default policy would
// still be a finding.
func TestWildcardStatementsAreIsolatedAndENIDeniedToTheCode(t *testing.T) {
	stack := cdktest.NewStack("Eni")
	builder := golambdatest.Builder(t, fixture(t))
	vpc := awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{
		MaxAzs: jsii.Number(2), NatGateways: jsii.Number(0),
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{Name: jsii.String("isolated"), SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}},
	})
	fn := golambda.NewFunction(stack, "InVpc", &golambda.Props{Entry: "fn/beta", Context: core.Context{Builder: builder}, Vpc: vpc})
	// A careless wildcard grant added later to the default policy.
	fn.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("sqs:SendMessage"), Resources: jsii.Strings("*"),
	}))
	tpl := assertions.Template_FromStack(stack, nil)
	eni := make([]any, len(golambda.ENIActions))
	for i, a := range golambda.ENIActions {
		eni[i] = a
	}
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Version": "2012-10-17", "Statement": []any{
			map[string]any{"Effect": "Allow", "Action": eni, "Resource": "*"},
			map[string]any{"Sid": "NoENIFromFunctionCode", "Effect": "Deny", "Action": eni, "Resource": "*",
				"Condition": map[string]any{"Null": map[string]any{"lambda:SourceFunctionArn": "false"}}},
		}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::IAM::Policy"), map[string]any{
		"PolicyDocument": map[string]any{"Version": "2012-10-17", "Statement": []any{
			map[string]any{"Effect": "Allow", "Action": []any{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}, "Resource": "*"},
		}},
	})
	tpl.HasResourceProperties(jsii.String("AWS::Lambda::Function"), map[string]any{
		"TracingConfig": map[string]any{"Mode": "Active"},
	})
	awscdk.Aspects_Of(stack).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	errs := assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-IAM5.*")))
	found := false
	for _, e := range *errs {
		if strings.Contains(*e.Id, "DefaultPolicy") {
			found = true
		} else {
			t.Errorf("unexpected finding %s: %v", *e.Id, e.Entry.Data)
		}
	}
	if !found {
		t.Fatal("a '*' grant in the default policy was not reported: an acknowledgement covers more than its statements")
	}
}
