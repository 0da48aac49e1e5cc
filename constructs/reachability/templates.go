package reachability

import "github.com/mercadofresco/integration/synthesized"

// names is what the walker needs of a reference: the resource it names,
// as "stack/logical id" (so a reference from any stack, Fn::ImportValue
// included, names the same resource), and a VPC's or subnet's CidrBlock.
type names struct{}

func (names) Ref(r *synthesized.Resource) (string, error) { return key(r), nil }

func (names) GetAtt(r *synthesized.Resource, attr string) (string, error) {
	if c, ok := r.Prop("CidrBlock").(string); ok && attr == "CidrBlock" {
		return c, nil
	}
	return key(r), nil
}
