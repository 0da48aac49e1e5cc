package synthesized

import (
	"errors"
	"testing"
)

// physicalApp is two stacks of one environment: a bus exported by one,
// and resources of every kind Physical names in the other.
func physicalApp(t *testing.T) *App {
	t.Helper()
	a := New("dev", "111111111111", "eu-west-1")
	if err := a.Add("Platform-dev", []byte(`{"Resources":{
		"Bus":{"Type":"AWS::Events::EventBus","Properties":{"Name":"bus-dev"}}},
		"Outputs":{"O":{"Value":{"Ref":"Bus"},"Export":{"Name":"Platform-dev:Bus"}}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Add("App-dev", []byte(`{"Resources":{
		"Q":{"Type":"AWS::SQS::Queue","Properties":{"QueueName":"cola-dev"}},
		"G":{"Type":"AWS::SQS::Queue"},
		"F":{"Type":"AWS::SQS::Queue","Properties":{"FifoQueue":true}},
		"T":{"Type":"AWS::SNS::Topic","Properties":{"TopicName":"tema-dev"}},
		"R":{"Type":"AWS::IAM::Role","Properties":{"RoleName":"rol","Path":"/identidad/"}},
		"U":{"Type":"AWS::IAM::Role"},
		"Rule":{"Type":"AWS::Events::Rule","Properties":{"Name":"regla","EventBusName":{"Fn::ImportValue":"Platform-dev:Bus"}}},
		"Default":{"Type":"AWS::Events::Rule"},
		"Alarm":{"Type":"AWS::CloudWatch::Alarm"},
		"Fn":{"Type":"AWS::Lambda::Function","Properties":{"FunctionName":"mf-fn-dev"}},
		"Live":{"Type":"AWS::Lambda::Alias","Properties":{"FunctionName":{"Ref":"Fn"},"Name":"live"}},
		"Table":{"Type":"AWS::DynamoDB::Table","Properties":{"TableName":"tabla-dev"}},
		"Secret":{"Type":"AWS::SecretsManager::Secret","Properties":{"Name":"clave"}},
		"Attach":{"Type":"AWS::SecretsManager::SecretTargetAttachment","Properties":{"SecretId":{"Ref":"Secret"}}},
		"Proxy":{"Type":"AWS::RDS::DBProxy","Properties":{"DBProxyName":"proxy-dev"}},
		"Cache":{"Type":"AWS::ElastiCache::ServerlessCache","Properties":{"ServerlessCacheName":"cache-dev"}},
		"Vpc":{"Type":"AWS::EC2::VPC","Properties":{"CidrBlock":"10.40.0.0/16"}},
		"Subnet":{"Type":"AWS::EC2::Subnet"}}}`)); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPhysical(t *testing.T) {
	a := physicalApp(t)
	p := Physical{App: a}
	for expr, want := range map[string]string{
		`{"Ref":"Q"}`:                                    "https://sqs.eu-west-1.amazonaws.com/111111111111/cola-dev",
		`{"Fn::GetAtt":["Q","Arn"]}`:                     "arn:aws:sqs:eu-west-1:111111111111:cola-dev",
		`{"Fn::GetAtt":["G","Arn"]}`:                     "arn:aws:sqs:eu-west-1:111111111111:App-dev-G",
		`{"Fn::GetAtt":["F","QueueName"]}`:               "App-dev-F.fifo",
		`{"Ref":"T"}`:                                    "arn:aws:sns:eu-west-1:111111111111:tema-dev",
		`{"Fn::GetAtt":["R","Arn"]}`:                     "arn:aws:iam::111111111111:role/identidad/rol",
		`{"Fn::GetAtt":["U","Arn"]}`:                     "arn:aws:iam::111111111111:role/App-dev-U",
		`{"Fn::GetAtt":["Rule","Arn"]}`:                  "arn:aws:events:eu-west-1:111111111111:rule/bus-dev/regla",
		`{"Fn::GetAtt":["Default","Arn"]}`:               "arn:aws:events:eu-west-1:111111111111:rule/App-dev-Default",
		`{"Fn::GetAtt":["Alarm","Arn"]}`:                 "arn:aws:cloudwatch:eu-west-1:111111111111:alarm:App-dev-Alarm",
		`{"Fn::GetAtt":["Table","StreamArn"]}`:           "arn:aws:dynamodb:eu-west-1:111111111111:table/tabla-dev/stream/c0ffee",
		`{"Ref":"Attach"}`:                               "arn:aws:secretsmanager:eu-west-1:111111111111:secret:clave-AbCdEf",
		`{"Fn::GetAtt":["Proxy","Endpoint"]}`:            "proxy-dev.proxy-c0ffee.eu-west-1.rds.amazonaws.com",
		`{"Fn::GetAtt":["Cache","Endpoint.Address"]}`:    "cache-dev-c0ffee.serverless.eu-west-1.cache.amazonaws.com",
		`{"Fn::GetAtt":["Vpc","CidrBlock"]}`:             "10.40.0.0/16",
		`{"Fn::Join":["",["x-",{"Ref":"AWS::Region"}]]}`: "x-eu-west-1",
	} {
		v := decode(t, expr)
		got, err := a.ResolveString("App-dev", v, p)
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", expr, got, err, want)
		}
	}
	for _, expr := range []string{`{"Ref":"Subnet"}`, `{"Fn::GetAtt":["Q","Nope"]}`} {
		if _, err := a.Resolve("App-dev", decode(t, expr), p); !errors.Is(err, ErrUnresolvable) {
			t.Errorf("%s: %v, want ErrUnresolvable", expr, err)
		}
	}
	// A local run answers first.
	local := Physical{App: a, Local: func(r *Resource, attr string) (string, bool) {
		return "http://127.0.0.1:9324/q/" + r.LogicalID, r.Type == "AWS::SQS::Queue" && attr == ""
	}}
	if got, err := a.ResolveString("App-dev", decode(t, `{"Ref":"Q"}`), local); err != nil || got != "http://127.0.0.1:9324/q/Q" {
		t.Errorf("local queue URL = %q, %v", got, err)
	}
	if got, err := a.ResolveString("App-dev", decode(t, `{"Ref":"T"}`), local); err != nil || got != "arn:aws:sns:eu-west-1:111111111111:tema-dev" {
		t.Errorf("topic past the local answers = %q, %v", got, err)
	}
}

func TestLiteralsFallBackOnlyWherePhysicalCannot(t *testing.T) {
	a := physicalApp(t)
	for _, l := range []Literals{a.Literals(), {Physical: Physical{App: a}, Placeholder: func(r *Resource, attr string) string { return "lit:" + r.LogicalID + "." + attr }}} {
		custom := l.Placeholder != nil
		for expr, want := range map[string][2]string{
			`{"Fn::GetAtt":["Q","Arn"]}`:     {"arn:aws:sqs:eu-west-1:111111111111:cola-dev", "arn:aws:sqs:eu-west-1:111111111111:cola-dev"},
			`{"Ref":"Subnet"}`:               {"cfn:App-dev/Subnet", "lit:Subnet."},
			`{"Fn::GetAtt":["Subnet","AZ"]}`: {"cfn:App-dev/Subnet.AZ", "lit:Subnet.AZ"},
		} {
			w := want[0]
			if custom {
				w = want[1]
			}
			if got, err := a.ResolveString("App-dev", decode(t, expr), l); err != nil || got != w {
				t.Errorf("%s = %q, %v; want %q", expr, got, err, w)
			}
		}
	}
}

// Find names the resource a value refers to, however the template writes
// the reference.
func TestFind(t *testing.T) {
	a := physicalApp(t)
	for expr, want := range map[string]string{
		`{"Ref":"Q"}`:                                                 "App-dev/Q",
		`{"Fn::GetAtt":["Q","Arn"]}`:                                  "App-dev/Q",
		`{"Fn::GetAtt":"Q.Arn"}`:                                      "App-dev/Q",
		`"arn:aws:sqs:eu-west-1:111111111111:cola-dev"`:               "App-dev/Q",
		`"https://sqs.eu-west-1.amazonaws.com/111111111111/cola-dev"`: "App-dev/Q",
		`"cola-dev"`: "App-dev/Q",
		`{"Fn::Join":["",["arn:aws:sqs:",{"Ref":"AWS::Region"},":111111111111:cola-dev"]]}`: "App-dev/Q",
		`{"Fn::Sub":"arn:aws:lambda:${AWS::Region}:${AWS::AccountId}:function:mf-fn-dev"}`:  "App-dev/Fn",
		`"arn:aws:lambda:eu-west-1:111111111111:function:mf-fn-dev:live"`:                   "App-dev/Fn",
		`{"Fn::ImportValue":"Platform-dev:Bus"}`:                                            "Platform-dev/Bus",
		`"arn:aws:events:eu-west-1:111111111111:event-bus/bus-dev"`:                         "Platform-dev/Bus",
		`{"Ref":"Subnet"}`: "App-dev/Subnet",
	} {
		got := a.Find("App-dev", decode(t, expr))
		if got == nil || got.Path() != want {
			t.Errorf("Find(%s) = %v, want %s", expr, got, want)
		}
	}
	for _, expr := range []string{`"cola-prod"`, `{"Ref":"Nope"}`, `{"Fn::ImportValue":"nope"}`, `null`, `"arn:aws:sqs:eu-west-1:222222222222:cola-dev"`} {
		if got := a.Find("App-dev", decode(t, expr)); got != nil {
			t.Errorf("Find(%s) = %s, want nothing", expr, got.Path())
		}
	}
	if got := a.Function("App-dev", decode(t, `{"Ref":"Live"}`)); got == nil || got.LogicalID != "Fn" {
		t.Errorf("Function(alias) = %v, want the function", got)
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := jsonUnmarshal(s, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
