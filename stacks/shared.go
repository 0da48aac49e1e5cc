// Package stacks assembles MercadoFresco's six CloudFormation stacks of
// one environment (Build), each one part with its own lifecycle: Platform
// (the data key and its watch, the alerts topic, the event bus), Network
// (the VPC, its NAT gateways and endpoints, the Valkey cache), Data (the
// idempotency and stock tables), Messaging (the fan-out topic and the four
// queue consumers), Outbox (Aurora, the RDS Proxy, the schema migration, the
// publisher and its cleanup) and OrderFlow (the payment tasks, the order
// workflow and its starter, the carts pipe, the ERP destination). Stacks
// only compose constructs; they receive the platform context through
// Shared. Cross-stack references become exports, grants on shared
// resources go to the grantee's role, and cross-stack security-group rules
// are resources of the dependent stack, so no stack edits another one's
// resources. docs/CONVENTIONS.md#stacks.
package stacks

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/constructs/core"
)

// Shared is what every stack of an environment receives: the platform
// context every construct's Props embed (the environment's name, the
// Lambda builder, the data key, the alerts topic, its log retention,
// removal policy and deletion protection), the environment and the bus.
type Shared struct {
	core.Context
	// Env is the environment being synthesised.
	Env config.Environment
	// Bus is bus-mercadofresco.
	Bus awsevents.IEventBus
}

// newStack creates a stack of part for env with the project's conventions:
// explicit account and region, a name that says part and environment,
// environment tags, termination protection in prod, and the availability
// zones from config (so VPCs synthesise without a context lookup).
func newStack(scope constructs.Construct, env config.Environment, part, description string) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(env.StackName(part)), &awscdk.StackProps{
		Env:                   env.CDKEnvironment(),
		StackName:             jsii.String(env.StackName(part)),
		Description:           jsii.String(fmt.Sprintf("MercadoFresco integration (%s): %s", env.Name, description)),
		TerminationProtection: jsii.Bool(env.DeletionProtection),
	})
	azKey := fmt.Sprintf("availability-zones:account=%s:region=%s", env.Account, env.Region)
	stack.Node().SetContext(jsii.String(azKey), env.AvailabilityZones)
	for k, v := range env.Tags {
		awscdk.Tags_Of(stack).Add(jsii.String(k), jsii.String(v), nil)
	}
	return stack
}

// output adds the stack output id (a description "" adds none).
func output(stack awscdk.Stack, id, description string, value *string) {
	var d *string
	if description != "" {
		d = jsii.String(description)
	}
	awscdk.NewCfnOutput(stack, jsii.String(id), &awscdk.CfnOutputProps{Description: d, Value: value})
}
