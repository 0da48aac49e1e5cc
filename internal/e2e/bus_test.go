package e2e

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The input transformer and the pipe's template fill placeholders as
// EventBridge does: a string inside quotes goes in as is, anything else as
// its JSON.
func TestFillTemplate(t *testing.T) {
	event := map[string]any{"detail": map[string]any{"id": "e-1", "n": 3.0, "lineas": []any{map[string]any{"sku": "A"}}, "q": `di "hola"`}}
	tr := &transformer{Paths: map[string]string{"id": "$.detail.id", "n": "$.detail.n", "l": "$.detail.lineas", "q": "$.detail.q", "none": "$.detail.x"},
		Template: `{"id":<id>,"n":<n>,"l":<l>,"s":"pedido <id> de <n>","q":"<q>","none":<none>,"lt":"a < b"}`}
	out, err := tr.apply(event)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	want := map[string]any{"id": "e-1", "n": 3.0, "s": "pedido e-1 de 3", "q": `di "hola"`, "none": nil, "lt": "a < b"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v (%s)", k, got[k], v, out)
		}
	}
	if l, ok := got["l"].([]any); !ok || len(l) != 1 {
		t.Errorf("l = %#v", got["l"])
	}
	rec := map[string]any{"eventID": "x1", "dynamodb": map[string]any{"Keys": map[string]any{"carrito_id": map[string]any{"S": "C-1"}}}}
	b, err := pipeTemplate(`{"id":"<$.eventID>","carrito":"<$.dynamodb.Keys.carrito_id.S>"}`, rec)
	if err != nil || string(b) != `{"id":"x1","carrito":"C-1"}` {
		t.Fatalf("pipe template: %s, %v", b, err)
	}
}

func TestJSONPath(t *testing.T) {
	v := map[string]any{"a": map[string]any{"b": "x", "c": []any{"y"}}}
	for path, want := range map[string]any{"$.a.b": "x", "$": v} {
		if got, ok := jsonPath(v, path); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, %v", path, got, ok)
		}
	}
	for _, path := range []string{"$.a.d", "a.b", "$.a.b.c", "$.a.c.0"} {
		if _, ok := jsonPath(v, path); ok {
			t.Errorf("%s resolved", path)
		}
	}
}
