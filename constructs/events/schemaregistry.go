package events

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2/awseventschemas"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/schemas"
)

// Defaults.
const (
	// RegistryName is the SPEC-style name of the registry (environments
	// add their suffix).
	RegistryName = "mercadofresco-eventos"
	// SchemaPrefix prefixes every schema name.
	SchemaPrefix = "mercadofresco"
	// SchemaType is the registry's type of the schema files.
	SchemaType = "JSONSchemaDraft4"
)

// SchemaRegistryProps of the registry. The zero value publishes every schema of
// schemas/ in a registry named by CloudFormation.
type SchemaRegistryProps struct {
	// RegistryName is the registry's physical name; nil lets
	// CloudFormation choose.
	RegistryName *string
	// Schemas to publish; nil means schemas.All().
	Schemas []schemas.Schema
}

// SchemaRegistry is the registry and its schemas, by schema name.
type SchemaRegistry struct {
	constructs.Construct
	Registry awseventschemas.CfnRegistry
	Schemas  map[string]awseventschemas.CfnSchema
}

// SchemaName is the registry's name of a schema file.
func SchemaName(s schemas.Schema) string {
	return fmt.Sprintf("%s@%s-v%d", SchemaPrefix, s.Name, s.Major)
}

// NewSchemaRegistry publishes the event contracts (schemas/, generated from
// the Go types) as an EventBridge schema registry: each schema file becomes
// an AWS::EventSchemas::Schema named <prefix>@<Name>-v<major>. It only
// publishes: MF-CONTRACT and `mf schemas` enforce the contracts.
func NewSchemaRegistry(scope constructs.Construct, id string, props *SchemaRegistryProps) *SchemaRegistry {
	c, v, props := core.Begin(scope, id, "schemaregistry", props)
	r := &SchemaRegistry{Construct: c, Schemas: map[string]awseventschemas.CfnSchema{}}
	list := props.Schemas
	if list == nil {
		list = schemas.All()
	}
	v.If(len(list) == 0, "no schema to publish (schemas/ is empty)")
	r.Registry = awseventschemas.NewCfnRegistry(c, jsii.String("Registry"), &awseventschemas.CfnRegistryProps{
		RegistryName: props.RegistryName,
		Description:  jsii.String("MercadoFresco event contracts (schemas/ of the integration repository), one schema per major version"),
	})
	for _, s := range list {
		name := SchemaName(s)
		schema := awseventschemas.NewCfnSchema(c, jsii.String(fmt.Sprintf("%sV%d", s.Name, s.Major)), &awseventschemas.CfnSchemaProps{
			RegistryName: r.Registry.AttrRegistryName(),
			SchemaName:   jsii.String(name),
			Type:         jsii.String(SchemaType),
			Content:      jsii.String(string(s.Content)),
			Description:  jsii.String(fmt.Sprintf("%s, major version %d (schemas/%s)", s.Name, s.Major, s.Path)),
		})
		r.Schemas[name] = schema
	}
	return r
}
