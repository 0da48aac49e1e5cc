// Package stacks assembles MercadoFresco's CloudFormation stacks for one
// environment. Each stack is one part of the system with its own lifecycle:
//
//   - Platform: the data key (with its watch), the alerts topic and the
//     event bus (everything else depends on them; they change rarely).
//   - Network: the VPC (subnets, NAT gateways, endpoints) and the Valkey
//     cache of the circuit breakers.
//   - Data: stateful stores owned by the consumers (the idempotency and
//     stock tables).
//   - Messaging: queues, fan-out topic, consumers.
//   - Outbox: Aurora PostgreSQL, the RDS Proxy, the schema migration and
//     the outbox publisher and cleanup.
//   - OrderFlow: the bus rules, the workflow starter, the order workflow
//     with its payment tasks, the ERP API destination and the carts pipe.
//
// Stacks receive what they share through Shared; cross-stack references
// become CloudFormation exports, and grants on shared resources go to the
// consumer's role policy (the data key's policy delegates its use to IAM,
// through the services only), and
// cross-stack security-group rules are separate ingress resources, so no
// stack ever edits another one's resources.
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
