package synthesized

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

type locals struct{}

func (locals) Ref(r *Resource) (string, error) {
	if r.Type == "AWS::SQS::Queue" {
		return "http://sqs.local/111111111111/" + r.Prop("QueueName").(string), nil
	}
	return "", fmt.Errorf("no local %s", r.Type)
}

func (locals) GetAtt(r *Resource, attr string) (string, error) {
	if r.Type == "AWS::SQS::Queue" && attr == "Arn" {
		return "arn:aws:sqs:eu-west-1:111111111111:" + r.Prop("QueueName").(string), nil
	}
	return "", fmt.Errorf("no local %s.%s", r.Type, attr)
}

func TestResolve(t *testing.T) {
	a := New("dev", "111111111111", "eu-west-1")
	if err := a.Add("Data-dev", []byte(`{"Resources":{"Q":{"Type":"AWS::SQS::Queue","Properties":{"QueueName":"cola-dev"}}},
		"Outputs":{"O":{"Value":{"Fn::GetAtt":["Q","Arn"]},"Export":{"Name":"Data-dev:QArn"}}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Add("App-dev", []byte(`{"Resources":{"D":{"Type":"AWS::SQS::Queue","Properties":{"QueueName":"dlq-dev"}}}}`)); err != nil {
		t.Fatal(err)
	}
	for expr, want := range map[string]any{
		`{"Fn::ImportValue":"Data-dev:QArn"}`:                                                    "arn:aws:sqs:eu-west-1:111111111111:cola-dev",
		`{"Fn::Join":["",["{\"cola\":\"",{"Ref":"D"},"\"}"]]}`:                                   `{"cola":"http://sqs.local/111111111111/dlq-dev"}`,
		`{"Fn::Sub":"arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:x/${D.Arn}"}`: "arn:aws:states:eu-west-1:111111111111:x/arn:aws:sqs:eu-west-1:111111111111:dlq-dev",
		`{"Fn::Select":[1,{"Fn::Split":[":",{"Fn::GetAtt":["D","Arn"]}]}]}`:                      "aws",
		`{"Fn::Sub":["${A}-${B}",{"A":"x","B":{"Ref":"AWS::Region"}}]}`:                          "x-eu-west-1",
	} {
		var v any
		if err := jsonUnmarshal(expr, &v); err != nil {
			t.Fatal(err)
		}
		got, err := a.Resolve("App-dev", v, locals{})
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got != want {
			t.Errorf("%s = %v, want %v", expr, got, want)
		}
	}
	for _, expr := range []string{`{"Ref":"Nope"}`, `{"Fn::ImportValue":"nope"}`, `{"Fn::Base64":"x"}`, `{"Fn::GetAtt":["D","QueueUrl"]}`} {
		var v any
		_ = jsonUnmarshal(expr, &v)
		if _, err := a.Resolve("App-dev", v, locals{}); err == nil {
			t.Errorf("%s resolved", expr)
		} else if !errors.Is(err, ErrUnresolvable) && !strings.Contains(err.Error(), "no local") {
			t.Errorf("%s: %v", expr, err)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func TestResolveImportsLeavesOtherIntrinsics(t *testing.T) {
	a := New("dev", "111111111111", "eu-west-1")
	if err := a.Add("Data-dev", []byte(`{"Resources":{"Q":{"Type":"AWS::SQS::Queue","Properties":{"QueueName":"cola-dev"}}},
		"Outputs":{"O":{"Value":{"Fn::GetAtt":["Q","Arn"]},"Export":{"Name":"Data-dev:QArn"}}}}`)); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := jsonUnmarshal(`{"A":[{"Fn::ImportValue":"Data-dev:QArn"}],"B":{"Ref":"X"}}`, &v); err != nil {
		t.Fatal(err)
	}
	got, err := a.ResolveImports("App-dev", v, locals{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"A": []any{"arn:aws:sqs:eu-west-1:111111111111:cola-dev"}, "B": map[string]any{"Ref": "X"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if err := jsonUnmarshal(`{"Fn::ImportValue":"nope"}`, &v); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ResolveImports("App-dev", v, locals{}); !errors.Is(err, ErrUnresolvable) {
		t.Errorf("an unknown export: %v, want ErrUnresolvable", err)
	}
}

func TestEvalString(t *testing.T) {
	resolve := func(r Reference) (any, error) {
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
			return "aws", nil
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
		got, err := EvalString(v, resolve)
		if err != nil || got != tc.want {
			t.Errorf("EvalString(%s) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"Ref":"Missing"}`, `{"Fn::If":["c","a","b"]}`, `{"a":1,"b":2}`, `{"Fn::Select":[5,["a"]]}`, `{"Fn::Sub":["${Missing}",{}]}`, `[1]`, `{"Fn::Join":[",",[[1]]]}`} {
		var v any
		_ = json.Unmarshal([]byte(bad), &v)
		if got, err := EvalString(v, resolve); err == nil {
			t.Errorf("EvalString(%s) = %q, want an error", bad, got)
		}
	}
}
