package stacks

import (
	"github.com/mercadofresco/integration/config"
)

// The roles that put events on bus-mercadofresco, named so that the bus's
// known-producers guard (in the platform stack, which their stacks
// reference) admits them by name. IAM role names are global to the
// account: the region is part of them, as for the workflow's role.
func publisherRoleName(env config.Environment) string {
	return env.PhysicalName("mercadofresco-publicador-outbox-" + env.Region)
}

func cartsPipeRoleName(env config.Environment) string {
	return env.PhysicalName("mercadofresco-pipe-carritos-" + env.Region)
}

// starterRoleName names the order starter's role, the one principal that
// should start mercadofresco-procesar-pedido: the organisation policy of
// docs/README-security.md ("The charge trusts no one's input") admits it
// by this name.
func starterRoleName(env config.Environment) string {
	return env.PhysicalName("mercadofresco-iniciar-pedido-" + env.Region)
}
