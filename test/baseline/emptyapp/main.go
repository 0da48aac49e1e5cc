// Command emptyapp is the smallest CDK Go app: one stack holding one no-op
// resource (a stack with no resource at all is refused by the CLI's
// template validation). It is not part of the product: scripts/measure.sh
// synthesises it in the same run as the real app, as the baseline the app's
// synth time is compared with.
package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("Empty"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("111111111111"), Region: jsii.String("eu-west-1")},
	})
	awscdk.NewCfnWaitConditionHandle(stack, jsii.String("Nothing"), nil)
	app.Synth(nil)
}
