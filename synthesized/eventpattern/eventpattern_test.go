package eventpattern

import (
	"encoding/json"
	"errors"
	"testing"
)

const pedidoCreado = `{
  "version": "0", "id": "e1", "source": "mercadofresco.tienda", "detail-type": "PedidoCreado",
  "account": "111111111111", "region": "eu-west-1", "time": "2026-12-04T19:00:00Z", "resources": [],
  "detail": {"id_evento": "6b1f", "pedido_id": "PED-1", "version": 1, "total_centimos": 4820,
             "lineas": [{"sku": "SKU-1", "cantidad": 2}, {"sku": "SKU-2", "cantidad": 1}],
             "cliente": {"email": "ana@example.com"}}
}`

// A DynamoDB stream record as EventBridge Pipes sees it.
const ttlRemove = `{
  "eventName": "REMOVE", "eventSource": "aws:dynamodb",
  "userIdentity": {"type": "Service", "principalId": "dynamodb.amazonaws.com"},
  "dynamodb": {"Keys": {"carrito_id": {"S": "C-1"}}}
}`

func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		event   string
		want    bool
	}{
		{"source and detail-type", `{"source":["mercadofresco.tienda"],"detail-type":["PedidoCreado"]}`, pedidoCreado, true},
		{"other detail-type", `{"detail-type":["PedidoConfirmado"]}`, pedidoCreado, false},
		{"OR within a list", `{"detail-type":["PedidoConfirmado","PedidoCreado"]}`, pedidoCreado, true},
		{"nested number", `{"detail":{"version":[1]}}`, pedidoCreado, true},
		{"number is not string", `{"detail":{"version":["1"]}}`, pedidoCreado, false},
		{"array element object", `{"detail":{"lineas":{"sku":["SKU-2"]}}}`, pedidoCreado, true},
		{"prefix", `{"detail":{"pedido_id":[{"prefix":"PED-"}]}}`, pedidoCreado, true},
		{"exists true", `{"detail":{"cliente":{"email":[{"exists":true}]}}}`, pedidoCreado, true},
		{"exists false on absent", `{"detail":{"cancelado":[{"exists":false}]}}`, pedidoCreado, true},
		{"exists false on present", `{"detail":{"pedido_id":[{"exists":false}]}}`, pedidoCreado, false},
		{"exists on an object", `{"detail":{"cliente":[{"exists":true}]}}`, pedidoCreado, false},
		{"prefix on array elements", `{"resources":[{"prefix":"arn:"}],"detail":{"lineas":{"sku":[{"prefix":"SKU-"}]}}}`, `{"resources":["x","arn:aws:y"],"detail":{"lineas":[{"sku":"SKU-9"}]}}`, true},
		{"absent field", `{"detail":{"cancelado":[true]}}`, pedidoCreado, false},
		{"pipe TTL removals", `{"eventName":["REMOVE"],"userIdentity":{"type":["Service"],"principalId":["dynamodb.amazonaws.com"]}}`, ttlRemove, true},
		{"pipe user deletes are not TTL", `{"eventName":["REMOVE"],"userIdentity":{"principalId":["dynamodb.amazonaws.com"]}}`, `{"eventName":"REMOVE"}`, false},
		{"object pattern on scalar", `{"source":{"x":["y"]}}`, pedidoCreado, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile([]byte(tc.pattern))
			if err != nil {
				t.Fatal(err)
			}
			var event map[string]any
			if err := json.Unmarshal([]byte(tc.event), &event); err != nil {
				t.Fatal(err)
			}
			if got := p.MatchValue(event); got != tc.want {
				t.Fatalf("Match(%s) = %v, want %v", tc.pattern, got, tc.want)
			}
		})
	}
}

func TestCompileFailsLoudly(t *testing.T) {
	for pattern, want := range map[string]error{
		`{"source":[{"wildcard":"mf.*"}]}`:                   ErrUnsupported,
		`{"detail":{"ip":[{"cidr":"10.0.0.0/8"}]}}`:          ErrUnsupported,
		`{"$or":[{"source":["a"]},{"source":["b"]}]}`:        ErrUnsupported,
		`{"source":[{"anything-but":"aws.events"}]}`:         ErrUnsupported,
		`{"source":[{"suffix":".tienda"}]}`:                  ErrUnsupported,
		`{"source":[{"prefix":{"equals-ignore-case":"m"}}]}`: ErrUnsupported,
		`{"detail":{"n":[{"numeric":[">",0]}]}}`:             ErrUnsupported,
		`{"source":"mercadofresco.tienda"}`:                  ErrInvalid,
		`{"source":[]}`:                                      ErrInvalid,
		`{"source":[{"prefix":"a","suffix":"b"}]}`:           ErrInvalid,
		`{"detail":{"n":[{"exists":"yes"}]}}`:                ErrInvalid,
		`[1]`:                                                ErrInvalid,
	} {
		if _, err := Compile([]byte(pattern)); !errors.Is(err, want) {
			t.Errorf("Compile(%s) = %v, want %v", pattern, err, want)
		}
	}
}
