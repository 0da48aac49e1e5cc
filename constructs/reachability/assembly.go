package reachability

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/mercadofresco/integration/constructs/cfntemplate"
)

// Environments groups the stacks of a cloud assembly by environment (the
// suffix after the last "-" of the stack name: MercadoFresco-Network-prod)
// and loads each group's templates.
func Environments(asm cxapi.CloudAssembly) (map[string]*cfntemplate.App, error) {
	apps := map[string]*cfntemplate.App{}
	for _, st := range *asm.Stacks() {
		name := *st.StackName()
		env := name[strings.LastIndex(name, "-")+1:]
		app, ok := apps[env]
		if !ok {
			e := st.Environment()
			app = cfntemplate.New(*e.Account, *e.Region)
			apps[env] = app
		}
		raw, err := json.Marshal(st.Template())
		if err != nil {
			return nil, fmt.Errorf("reachability: %s: %w", name, err)
		}
		if err := app.Add(name, raw); err != nil {
			return nil, err
		}
	}
	return apps, nil
}

// CheckAssembly checks every environment of asm and returns the findings,
// environment by environment (sorted).
func CheckAssembly(asm cxapi.CloudAssembly) ([]string, error) {
	apps, err := Environments(asm)
	if err != nil {
		return nil, err
	}
	envs := make([]string, 0, len(apps))
	for e := range apps {
		envs = append(envs, e)
	}
	sort.Strings(envs)
	var out []string
	for _, e := range envs {
		for _, f := range Findings(Check(apps[e])) {
			out = append(out, e+": "+f)
		}
	}
	return out, nil
}
