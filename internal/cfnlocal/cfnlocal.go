// Package cfnlocal gives the references of the synthesized templates
// (constructs/cfntemplate) a local meaning, so a local run of the whole flow
// (the end-to-end test) and the operator tools take their routing,
// configuration and state machine definitions from what would be deployed
// instead of a re-declared copy. Physical is the meaning AWS gives them.
// The template types are cfntemplate's, named here for its callers.
package cfnlocal

import "github.com/mercadofresco/integration/constructs/cfntemplate"

// The template types and functions, as in constructs/cfntemplate.
type (
	App      = cfntemplate.App
	Resource = cfntemplate.Resource
	Locals   = cfntemplate.Locals
)

// ErrUnresolvable is cfntemplate.ErrUnresolvable.
var ErrUnresolvable = cfntemplate.ErrUnresolvable

// LoadDir is cfntemplate.LoadDir.
func LoadDir(dir, env, account, region string) (*App, error) {
	return cfntemplate.LoadDir(dir, env, account, region)
}

// New is cfntemplate.New.
func New(account, region string) *App { return cfntemplate.New(account, region) }
