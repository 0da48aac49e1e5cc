package cfnlocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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
	a := &App{Account: "111111111111", Region: "eu-west-1", Partition: "aws", Templates: map[string]*Template{}, exports: map[string]export{}}
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

func TestPhysical(t *testing.T) {
	a := New("111111111111", "eu-west-1")
	if err := a.Add("Platform-dev", []byte(`{"Resources":{
		"Bus":{"Type":"AWS::Events::EventBus","Properties":{"Name":"bus-dev"}}},
		"Outputs":{"O":{"Value":{"Ref":"Bus"},"Export":{"Name":"Platform-dev:Bus"}}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Add("App-dev", []byte(`{"Resources":{
		"Q":{"Type":"AWS::SQS::Queue","Properties":{"QueueName":"cola-dev"}},
		"G":{"Type":"AWS::SQS::Queue"},
		"T":{"Type":"AWS::SNS::Topic","Properties":{"TopicName":"tema-dev"}},
		"R":{"Type":"AWS::IAM::Role","Properties":{"RoleName":"rol","Path":"/identidad/"}},
		"U":{"Type":"AWS::IAM::Role"},
		"Rule":{"Type":"AWS::Events::Rule","Properties":{"Name":"regla","EventBusName":{"Fn::ImportValue":"Platform-dev:Bus"}}},
		"Default":{"Type":"AWS::Events::Rule"},
		"Alarm":{"Type":"AWS::CloudWatch::Alarm"},
		"Cache":{"Type":"AWS::ElastiCache::ServerlessCache"}}}`)); err != nil {
		t.Fatal(err)
	}
	p := Physical{App: a}
	for expr, want := range map[string]string{
		`{"Ref":"Q"}`:                      "https://sqs.eu-west-1.amazonaws.com/111111111111/cola-dev",
		`{"Fn::GetAtt":["Q","Arn"]}`:       "arn:aws:sqs:eu-west-1:111111111111:cola-dev",
		`{"Fn::GetAtt":["G","Arn"]}`:       "arn:aws:sqs:eu-west-1:111111111111:App-dev-G",
		`{"Ref":"T"}`:                      "arn:aws:sns:eu-west-1:111111111111:tema-dev",
		`{"Fn::GetAtt":["R","Arn"]}`:       "arn:aws:iam::111111111111:role/identidad/rol",
		`{"Fn::GetAtt":["U","Arn"]}`:       "arn:aws:iam::111111111111:role/App-dev-U",
		`{"Fn::GetAtt":["Rule","Arn"]}`:    "arn:aws:events:eu-west-1:111111111111:rule/bus-dev/regla",
		`{"Fn::GetAtt":["Default","Arn"]}`: "arn:aws:events:eu-west-1:111111111111:rule/App-dev-Default",
		`{"Fn::GetAtt":["Alarm","Arn"]}`:   "arn:aws:cloudwatch:eu-west-1:111111111111:alarm:App-dev-Alarm",
	} {
		var v any
		if err := jsonUnmarshal(expr, &v); err != nil {
			t.Fatal(err)
		}
		got, err := a.ResolveString("App-dev", v, p)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", expr, got, err, want)
		}
	}
	for _, expr := range []string{`{"Ref":"Cache"}`, `{"Fn::GetAtt":["Q","Nope"]}`} {
		var v any
		_ = jsonUnmarshal(expr, &v)
		if _, err := a.Resolve("App-dev", v, p); !errors.Is(err, ErrUnresolvable) {
			t.Errorf("%s: %v, want ErrUnresolvable", expr, err)
		}
	}
}
