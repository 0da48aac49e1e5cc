package core_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/internal/cdktest"
	"github.com/mercadofresco/integration/synthesized"
)

// An acknowledgement and a source reach the assembly as construct
// metadata the checks read; an acknowledgement without a reason is a
// synthesis error.
func TestAcknowledgeAndSetBy(t *testing.T) {
	app := awscdk.NewApp(nil)
	stack := cdktest.NewStackIn(app, "Ack-test")
	q := awssqs.NewQueue(stack, jsii.String("Scratch"), nil)
	core.Acknowledge(q, "MF-SQS-DLQ", "test scratch queue: messages are disposable")
	core.SetBy(q, "VisibilityTimeout", "ScratchVisibility in constructs/example")
	core.Acknowledge(awssqs.NewQueue(stack, jsii.String("Blank"), nil), "MF-SQS-DLQ", " ")
	cdktest.RequireContains(t, cdktest.Errors(stack), "core.Acknowledge(MF-SQS-DLQ) on Ack-test/Blank needs a reason")
	app.Synth(nil)
	asm, err := synthesized.Load(*app.Synth(nil).Directory())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, e := range asm.Env("test").ConstructMetadata("Ack-test/Scratch/Resource") {
		got[e.Type] = e.Data
	}
	ack, _ := got[synthesized.MetadataAcknowledged].(map[string]any)
	if ack["rule"] != "MF-SQS-DLQ" || ack["reason"] != "test scratch queue: messages are disposable" {
		t.Errorf("acknowledgement %v", got)
	}
	if got[synthesized.MetadataSetBy+"VisibilityTimeout"] != "ScratchVisibility in constructs/example" {
		t.Errorf("source %v", got)
	}
}
