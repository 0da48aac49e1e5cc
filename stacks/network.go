package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/constructs/network"
)

// NetworkStack holds the VPC (subnets, NAT gateways, endpoints) and the
// Valkey cache mercadofresco-catalogo that the functions share. It changes
// rarely and everything in a VPC depends on it.
type NetworkStack struct {
	awscdk.Stack
	// Network is the VPC: data subnets (Aurora, proxy, cache), isolated
	// application subnets, egress subnets through NAT, endpoints.
	Network *network.Network
	// Cache is mercadofresco-catalogo (created, or imported from config):
	// Bind a function to it for its circuit breakers.
	Cache *datastore.Cache
}

// NewNetworkStack creates the network stack of shared.Env.
func NewNetworkStack(scope constructs.Construct, shared *Shared) *NetworkStack {
	env := shared.Env
	stack := newStack(scope, env, "Network", "VPC, NAT gateways, endpoints and the Valkey cache")
	net := network.New(stack, "Red", &network.Props{
		Context:     shared.Context,
		MaxAzs:      float64(len(env.AvailabilityZones)),
		NatGateways: env.NatGateways,
		EventBus:    shared.Bus,
		// Every flow, accepted too, where an incident must be traceable.
		RejectedTrafficOnly: !env.FlowLogsAllTraffic,
	})
	catalogo := datastore.NewCache(stack, "Catalogo", &datastore.CacheProps{
		Context:   shared.Context,
		CacheName: jsii.String(env.PhysicalName(datastore.SpecName)),
		Import:    env.Cache,
		Vpc:       net.Vpc,
		Subnets:   net.DataSubnets(),
	})
	return &NetworkStack{Stack: stack, Network: net, Cache: catalogo}
}
