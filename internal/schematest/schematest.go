// Package schematest validates a message against its committed JSON Schema
// (schemas/<Name>/v<major>.json) with santhosh-tekuri/jsonschema/v6, so a
// producer's test proves that what it emits is the contract it declares.
package schematest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mercadofresco/integration/schemas"
)

// Check reports whether doc is valid against name's major version.
func Check(name string, major int, doc []byte) error {
	all := schemas.All()
	i := slices.IndexFunc(all, func(s schemas.Schema) bool { return s.Name == name && s.Major == major })
	if i < 0 {
		return fmt.Errorf("schematest: no schema %s", schemas.Path(name, major))
	}
	s := all[i]
	def, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Content))
	if err != nil {
		return fmt.Errorf("schematest: %s: %w", s.Path, err)
	}
	url := "mem:///" + s.Path
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, def); err != nil {
		return err
	}
	sch, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("schematest: %s: %w", s.Path, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("schematest: message is not JSON: %w", err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s v%d: %w", name, major, err)
	}
	return nil
}

// Validate fails t when doc is not valid against name's major version.
func Validate(t testing.TB, name string, major int, doc []byte) {
	t.Helper()
	if err := Check(name, major, doc); err != nil {
		t.Errorf("%v\nmessage: %s", err, doc)
	}
}
