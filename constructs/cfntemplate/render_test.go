package cfntemplate_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mercadofresco/integration/constructs/cfntemplate"
)

func TestRender(t *testing.T) {
	resolve := func(r cfntemplate.Reference) (string, error) {
		switch {
		case r.Import != "":
			return "imported(" + r.Import + ")", nil
		case r.LogicalID == "AWS::Region":
			return "eu-west-1", nil
		case r.LogicalID == "Missing":
			return "", errors.New("no such resource")
		case r.Attribute != "":
			return r.LogicalID + "." + r.Attribute, nil
		case r.LogicalID == "AWS::Partition":
			return "", nil // Render's default applies
		}
		return "ref(" + r.LogicalID + ")", nil
	}
	tests := []struct {
		in, want string
	}{
		{`"plain"`, "plain"},
		{`{"Ref":"Queue"}`, "ref(Queue)"},
		{`{"Fn::GetAtt":["Fn","Arn"]}`, "Fn.Arn"},
		{`{"Fn::GetAtt":"Fn.Arn"}`, "Fn.Arn"},
		{`{"Fn::Join":["",["arn:",{"Ref":"AWS::Partition"},":states:",{"Ref":"AWS::Region"}]]}`, "arn:aws:states:eu-west-1"},
		{`{"Fn::ImportValue":"Stack:Export"}`, "imported(Stack:Export)"},
		{`{"Fn::Select":[1,["a","b"]]}`, "b"},
		{`{"Fn::Sub":"${AWS::Region}/${Fn.Arn}/${!Literal}"}`, "eu-west-1/Fn.Arn/${Literal}"},
		{`{"Fn::Join":[",",[1,true]]}`, "1,true"},
		{`{"Fn::Sub":["${A}-${AWS::Region}",{"A":{"Ref":"Queue"}}]}`, "ref(Queue)-eu-west-1"},
	}
	for _, tc := range tests {
		var v any
		if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
			t.Fatal(err)
		}
		got, err := cfntemplate.Render(v, resolve)
		if err != nil || got != tc.want {
			t.Errorf("Render(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"Ref":"Missing"}`, `{"Fn::If":["c","a","b"]}`, `{"a":1,"b":2}`, `{"Fn::Select":[5,["a"]]}`, `{"Fn::Sub":["${Missing}",{}]}`, `[1]`, `{"Fn::Join":[",",[[1]]]}`} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if got, err := cfntemplate.Render(v, resolve); err == nil {
			t.Errorf("Render(%s) = %q, want an error", bad, got)
		}
	}
}
