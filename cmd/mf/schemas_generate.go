package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/mercadofresco/integration/lambdas/eventsapi"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/schemas"
)

// contract is one message with a schema: its name, its current major
// version and the Go type that defines it.
type contract struct {
	name  string
	major int
	value any
	// versioned: the message carries "version" (the events); the workflow
	// task inputs and outputs do not.
	versioned bool
}

// contracts are the messages that cross a boundary: the events, and the
// payment tasks' inputs and outputs (the workflow calls them).
var contracts = []contract{
	{eventsapi.TypePedidoCreado, eventsapi.PedidoCreadoVersion, eventsapi.PedidoCreado{}, true},
	{eventsapi.TypePedidoConfirmado, eventsapi.PedidoConfirmadoVersion, eventsapi.PedidoConfirmado{}, true},
	{eventsapi.TypeMovimientoStock, eventsapi.MovimientoStockVersion, eventsapi.MovimientoStock{}, true},
	{eventsapi.TypeCarritoAbandonado, eventsapi.CarritoAbandonadoVersion, eventsapi.CarritoAbandonado{}, true},
	{"CobroInput", 1, lambdaapi.CobroInput{}, false},
	{"CobroOutput", 1, lambdaapi.CobroOutput{}, false},
	{"ReembolsoInput", 1, lambdaapi.ReembolsoInput{}, false},
	{"ReembolsoOutput", 1, lambdaapi.ReembolsoOutput{}, false},
}

// generate renders the schema of every contract's current major version,
// by path (schemas.Path).
func generate() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, c := range contracts {
		b, err := renderSchema(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		out[schemas.Path(c.name, c.major)] = b
	}
	return out, nil
}

func renderSchema(c contract) ([]byte, error) {
	r := &jsonschema.Reflector{
		Anonymous: true,
		// Old consumers ignore new fields: a schema never closes the object.
		AllowAdditionalProperties: true,
		DoNotReference:            true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if t == reflect.TypeOf(eventsapi.TipoMovimiento("")) {
				s := &jsonschema.Schema{Type: "string"}
				for _, v := range eventsapi.TiposMovimiento() {
					s.Enum = append(s.Enum, string(v))
				}
				return s
			}
			return nil
		},
	}
	s := r.Reflect(c.value)
	s.Version = schemas.Draft4
	s.Title = c.name
	if c.versioned {
		s.Description = fmt.Sprintf("%s, major version %d (docs/design.md#event-contracts).", c.name, c.major)
		if v, ok := s.Properties.Get("version"); ok {
			v.Enum = []any{c.major}
		}
	} else {
		s.Description = fmt.Sprintf("%s of the order workflow's payment task (lambdas/payment/paymentapi).", c.name)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
