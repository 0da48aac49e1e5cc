package reachability

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"

	"github.com/mercadofresco/integration/synthesized"
)

// CheckAssembly checks every environment of asm and returns the findings,
// environment by environment (sorted).
func CheckAssembly(asm cxapi.CloudAssembly) ([]string, error) {
	loaded, err := synthesized.Load(*asm.Directory())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, app := range loaded.Envs {
		for _, f := range Findings(Check(app)) {
			out = append(out, app.Env+": "+f)
		}
	}
	return out, nil
}
