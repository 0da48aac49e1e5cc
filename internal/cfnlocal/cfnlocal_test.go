package cfnlocal

import (
	"encoding/json"
	"errors"
	"testing"
)

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

func TestLiteralsFallBackOnlyWherePhysicalCannot(t *testing.T) {
	a := New("111111111111", "eu-west-1")
	if err := a.Add("App-dev", []byte(`{"Resources":{
		"Q":{"Type":"AWS::SQS::Queue","Properties":{"QueueName":"cola-dev"}},
		"Cache":{"Type":"AWS::ElastiCache::ServerlessCache"}}}`)); err != nil {
		t.Fatal(err)
	}
	l := Literals{Physical: Physical{App: a}, Placeholder: func(r *Resource, attr string) string { return "lit:" + r.LogicalID + "." + attr }}
	for expr, want := range map[string]string{
		`{"Fn::GetAtt":["Q","Arn"]}`:                  "arn:aws:sqs:eu-west-1:111111111111:cola-dev",
		`{"Ref":"Cache"}`:                             "lit:Cache.",
		`{"Fn::GetAtt":["Cache","Endpoint.Address"]}`: "lit:Cache.Endpoint.Address",
	} {
		var v any
		if err := jsonUnmarshal(expr, &v); err != nil {
			t.Fatal(err)
		}
		if got, err := a.ResolveString("App-dev", v, l); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", expr, got, err, want)
		}
	}
}
