// Package cdktest holds what every CDK test package of the project needs:
// the project's pinned Node first on PATH for the tools tests start (the CDK
// CLI, dynalite), a check that jsii itself runs on it, jsii.Close once at
// the end, and a stack's errors: its annotations and, for an app under
// Check, the findings of the project's checks on its templates.
package cdktest

import (
	"fmt"
	"github.com/mercadofresco/integration/constructs/golambda/gobuild"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/checks"
	"github.com/mercadofresco/integration/synthesized"
)

// Main runs the package's tests, then the cleanup functions, then closes
// the jsii kernel. Use it as `func TestMain(m *testing.M) { cdktest.Main(m) }`.
//
// jsii starts its `node` while the test binary initialises its packages,
// before TestMain runs, so PATH must already name the pinned Node 22 when
// `go test` starts: `make test` does that. Run directly with another Node
// first on PATH, Main says so on stderr (the tests still run).
func Main(m *testing.M, cleanup ...func()) {
	if dir, err := gobuild.FindUp("node_modules/.bin/node"); err == nil {
		bin := filepath.Join(dir, "node_modules", ".bin")
		if found, err := exec.LookPath("node"); err == nil && filepath.Dir(found) != bin {
			fmt.Fprintf(os.Stderr, "cdktest: jsii runs on %s, not the project's pinned Node in %s; run tests with `make test` or PATH=%s:$PATH\n", found, bin, bin)
		}
		os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	code := m.Run()
	for _, c := range cleanup {
		c()
	}
	jsii.Close()
	os.Exit(code)
}

// Account and Region of the test stacks: placeholders, never contacted.
const (
	Account = "111111111111"
	Region  = "eu-west-1"
)

// NewStack creates a stack named id in a new app, in Account/Region.
func NewStack(id string) awscdk.Stack {
	return NewStackIn(awscdk.NewApp(nil), id)
}

// NewStackIn creates a stack named id in app, in Account/Region, with the
// region's first three availability zones known (a VPC then synthesises
// without a lookup).
func NewStackIn(app awscdk.App, id string) awscdk.Stack {
	stack := awscdk.NewStack(app, jsii.String(id), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String(Account), Region: jsii.String(Region)},
	})
	stack.Node().SetContext(jsii.String("availability-zones:account="+Account+":region="+Region), jsii.Strings(Region+"a", Region+"b", Region+"c"))
	return stack
}

// Platform is a test stack with cdk-nag-clean stand-ins for what the
// platform stack gives every construct: the data key (rotation on) and the
// alerts topic (encrypted with it, TLS only).
type Platform struct {
	App    awscdk.App
	Stack  awscdk.Stack
	Key    awskms.Key
	Alerts awssns.Topic
}

// NewPlatform creates a Platform whose stack is named id.
func NewPlatform(id string) *Platform {
	app := awscdk.NewApp(nil)
	stack := NewStackIn(app, id)
	key := awskms.NewKey(stack, jsii.String("DataKey"), &awskms.KeyProps{EnableKeyRotation: jsii.Bool(true)})
	alerts := awssns.NewTopic(stack, jsii.String("Alerts"), &awssns.TopicProps{MasterKey: key, EnforceSSL: jsii.Bool(true)})
	return &Platform{App: app, Stack: stack, Key: key, Alerts: alerts}
}

// checkedMarker is the construct Check adds to an app.
const checkedMarker = "MercadoFrescoChecks"

// Check makes Errors report, beside the annotations, the findings of the
// project's checks (package checks) on the app's synthesized templates.
func Check(app awscdk.App) { constructs.NewConstruct(app, jsii.String(checkedMarker)) }

// Errors returns the text of every synthesis error under stack, and its
// Findings when its app is checked (Check).
func Errors(stack awscdk.Stack) []string {
	var out []string
	for _, m := range *assertions.Annotations_FromStack(stack).FindError(jsii.String("*"), assertions.Match_AnyValue()) {
		out = append(out, fmt.Sprint(m.Entry.Data))
	}
	if stack.Node().Root().Node().TryFindChild(jsii.String(checkedMarker)) == nil {
		return out
	}
	return append(out, Findings(stack)...)
}

// Findings returns the findings of the checks on stack, as its app
// synthesizes.
func Findings(stack awscdk.Stack) []string {
	asm, err := synthesized.Load(*awscdk.Stage_Of(stack).Synth(nil).Directory())
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, f := range checks.Run(asm) {
		if f.Stack == *stack.StackName() {
			out = append(out, f.String())
		}
	}
	return out
}

// RequireContains fails the test unless one of msgs contains every part.
func RequireContains(t testing.TB, msgs []string, parts ...string) {
	t.Helper()
	for _, m := range msgs {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(m, p)
		}
		if ok {
			return
		}
	}
	t.Fatalf("no message contains %q; got:\n%s", parts, strings.Join(msgs, "\n"))
}
