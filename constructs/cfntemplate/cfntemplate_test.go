package cfntemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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
	a := New("111111111111", "eu-west-1")
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

func TestLoadDirReadsTheCommittedSnapshots(t *testing.T) {
	a, err := LoadDir(filepath.Join("..", "..", "test", "testdata", "snapshots"), "dev", "111111111111", "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Resources("AWS::SQS::Queue")) == 0 || len(a.Resources("AWS::Lambda::Function")) == 0 {
		t.Fatal("no queues or functions in the dev snapshots")
	}
	for s := range a.Templates {
		if !strings.HasSuffix(s, "dev") {
			t.Errorf("loaded %s", s)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func TestResolveImportsLeavesOtherIntrinsics(t *testing.T) {
	a := New("111111111111", "eu-west-1")
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
