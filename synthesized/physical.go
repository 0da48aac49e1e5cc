package synthesized

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Physical gives references the meaning AWS gives them: a resource's
// physical name is its name property, or "<stack>-<logical id>" where
// CloudFormation would generate one, and its ARN, URL or endpoint is the
// one AWS builds from that name in the app's account and region (with a
// fixed "c0ffee" where AWS adds a random part). Local, when set, answers
// first: a local run's own values (a fake's queue URL, the local
// database's host). A type or attribute it does not know is an error
// wrapping ErrUnresolvable naming it.
type Physical struct {
	App *App
	// Local is a local run's value of {"Ref": r} (attr "") or
	// {"Fn::GetAtt": [r, attr]}, ok false where AWS's meaning stands.
	Local func(r *Resource, attr string) (value string, ok bool)
}

var _ Locals = Physical{}

// nameProps is the property that names each type Physical knows ("": the
// type has no name property).
var nameProps = map[string]string{
	"AWS::SQS::Queue":                   "QueueName",
	"AWS::SNS::Topic":                   "TopicName",
	"AWS::IAM::Role":                    "RoleName",
	"AWS::Events::Rule":                 "Name",
	"AWS::Events::EventBus":             "Name",
	"AWS::Events::ApiDestination":       "Name",
	"AWS::Events::Connection":           "Name",
	"AWS::CloudWatch::Alarm":            "AlarmName",
	"AWS::Lambda::Function":             "FunctionName",
	"AWS::StepFunctions::StateMachine":  "StateMachineName",
	"AWS::Pipes::Pipe":                  "Name",
	"AWS::Scheduler::Schedule":          "Name",
	"AWS::Logs::LogGroup":               "LogGroupName",
	"AWS::DynamoDB::Table":              "TableName",
	"AWS::ElastiCache::ServerlessCache": "ServerlessCacheName",
	"AWS::SecretsManager::Secret":       "Name",
	"AWS::SES::ConfigurationSet":        "Name",
	"AWS::RDS::DBProxy":                 "DBProxyName",
	"AWS::KMS::Key":                     "",
}

// arnFormats are the ARNs AWS builds from a physical name: type.attribute
// to service and resource ("%s" the name).
var arnFormats = map[string][2]string{
	"AWS::SQS::Queue.Arn":                  {"sqs", "%s"},
	"AWS::SNS::Topic.TopicArn":             {"sns", "%s"},
	"AWS::SNS::Topic.Arn":                  {"sns", "%s"},
	"AWS::Events::EventBus.Arn":            {"events", "event-bus/%s"},
	"AWS::CloudWatch::Alarm.Arn":           {"cloudwatch", "alarm:%s"},
	"AWS::Lambda::Function.Arn":            {"lambda", "function:%s"},
	"AWS::StepFunctions::StateMachine.Arn": {"states", "stateMachine:%s"},
	"AWS::Pipes::Pipe.Arn":                 {"pipes", "pipe/%s"},
	"AWS::Logs::LogGroup.Arn":              {"logs", "log-group:%s:*"},
	"AWS::DynamoDB::Table.Arn":             {"dynamodb", "table/%s"},
	"AWS::DynamoDB::Table.StreamArn":       {"dynamodb", "table/%s/stream/c0ffee"},
	"AWS::Events::ApiDestination.Arn":      {"events", "api-destination/%s"},
	"AWS::Events::Connection.Arn":          {"events", "connection/%s"},
	"AWS::Scheduler::Schedule.Arn":         {"scheduler", "schedule/default/%s"},
	"AWS::SecretsManager::Secret.Arn":      {"secretsmanager", "secret:%s-AbCdEf"},
}

// NameProperty is the property that names resources of typ ("" when it
// has none or Physical does not know it).
func NameProperty(typ string) string { return nameProps[typ] }

// Name is r's physical name.
func (p Physical) Name(r *Resource) (string, error) {
	prop, ok := nameProps[r.Type]
	if !ok {
		return "", fmt.Errorf("%w: no physical name for %s (%s)", ErrUnresolvable, r.Type, r.Path())
	}
	if v, ok := r.Properties[prop]; ok && prop != "" {
		return p.App.ResolveString(r.Stack, v, p)
	}
	if r.Type == "AWS::SQS::Queue" && r.Properties["FifoQueue"] == true {
		return r.Stack + "-" + r.LogicalID + ".fifo", nil
	}
	return r.Stack + "-" + r.LogicalID, nil
}

func (p Physical) arn(service, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", p.App.Partition, service, p.App.Region, p.App.Account, resource)
}

// Ref is what {"Ref": r} returns.
func (p Physical) Ref(r *Resource) (string, error) {
	if p.Local != nil {
		if v, ok := p.Local(r, ""); ok {
			return v, nil
		}
	}
	switch r.Type {
	case "AWS::SNS::Topic", "AWS::StepFunctions::StateMachine", "AWS::SecretsManager::Secret":
		return p.GetAtt(r, "Arn")
	case "AWS::KMS::Key":
		return r.LogicalID, nil
	case "AWS::SecretsManager::SecretTargetAttachment":
		return p.App.ResolveString(r.Stack, r.Properties["SecretId"], p)
	}
	name, err := p.Name(r)
	if err == nil && r.Type == "AWS::SQS::Queue" {
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", p.App.Region, p.App.Account, name), nil
	}
	return name, err
}

// GetAtt is what {"Fn::GetAtt": [r, attr]} returns.
func (p Physical) GetAtt(r *Resource, attr string) (string, error) {
	if p.Local != nil {
		if v, ok := p.Local(r, attr); ok {
			return v, nil
		}
	}
	if attr == "CidrBlock" && (r.Type == "AWS::EC2::VPC" || r.Type == "AWS::EC2::Subnet") {
		return p.App.ResolveString(r.Stack, r.Properties["CidrBlock"], p)
	}
	if r.Type+"."+attr == "AWS::RDS::DBCluster.Endpoint.Port" { // the engine's default unless set
		port, ok := r.Properties["Port"]
		if !ok {
			port = map[bool]int{true: 5432, false: 3306}[strings.Contains(fmt.Sprint(r.Properties["Engine"]), "postgres")]
		}
		return p.App.ResolveString(r.Stack, port, p)
	}
	name, err := p.Name(r)
	if err != nil {
		return "", err
	}
	if f, ok := arnFormats[r.Type+"."+attr]; ok {
		return p.arn(f[0], fmt.Sprintf(f[1], name)), nil
	}
	switch r.Type + "." + attr {
	case "AWS::SQS::Queue.QueueUrl":
		return p.Ref(r)
	case "AWS::SQS::Queue.QueueName", "AWS::SNS::Topic.TopicName", "AWS::Events::EventBus.Name", "AWS::StepFunctions::StateMachine.Name":
		return name, nil
	case "AWS::IAM::Role.Arn":
		path := "/"
		if v, ok := r.Properties["Path"]; ok {
			if path, err = p.App.ResolveString(r.Stack, v, p); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("arn:%s:iam::%s:role%s%s", p.App.Partition, p.App.Account, path, name), nil
	case "AWS::Events::Rule.Arn":
		bus := "default"
		if v, ok := r.Properties["EventBusName"]; ok {
			if bus, err = p.App.ResolveString(r.Stack, v, p); err != nil {
				return "", err
			}
			// A bus may be named by its ARN.
			if i := strings.LastIndex(bus, "event-bus/"); i >= 0 {
				bus = bus[i+len("event-bus/"):]
			}
		}
		if bus == "default" {
			return p.arn("events", "rule/"+name), nil
		}
		return p.arn("events", "rule/"+bus+"/"+name), nil
	case "AWS::KMS::Key.Arn":
		return p.arn("kms", "key/"+r.LogicalID), nil
	case "AWS::RDS::DBProxy.Endpoint":
		return name + ".proxy-c0ffee." + p.App.Region + ".rds.amazonaws.com", nil
	case "AWS::ElastiCache::ServerlessCache.Endpoint.Address":
		return name + "-c0ffee.serverless." + p.App.Region + ".cache.amazonaws.com", nil
	case "AWS::ElastiCache::ServerlessCache.Endpoint.Port":
		return "6379", nil
	}
	return "", fmt.Errorf("%w: no meaning for Fn::GetAtt %s.%s (%s)", ErrUnresolvable, r.Type, attr, r.Path())
}

// Literals gives references the meaning Physical gives them and, for the
// resources Physical cannot name (subnets, security groups, ...), the
// literal Placeholder returns (attr "" for a Ref); a nil Placeholder writes
// "cfn:<stack>/<logical id>[.<attr>]". A reader that never compares such
// values only carries them.
type Literals struct {
	Physical
	Placeholder func(r *Resource, attr string) string
}

var _ Locals = Literals{}

// Ref is Physical's Ref, or the placeholder.
func (l Literals) Ref(r *Resource) (string, error) {
	s, err := l.Physical.Ref(r)
	return l.orPlaceholder(r, "", s, err)
}

// GetAtt is Physical's GetAtt, or the placeholder.
func (l Literals) GetAtt(r *Resource, attr string) (string, error) {
	s, err := l.Physical.GetAtt(r, attr)
	return l.orPlaceholder(r, attr, s, err)
}

func (l Literals) orPlaceholder(r *Resource, attr, s string, err error) (string, error) {
	switch {
	case !errors.Is(err, ErrUnresolvable):
		return s, err
	case l.Placeholder != nil:
		return l.Placeholder(r, attr), nil
	case attr == "":
		return "cfn:" + r.Stack + "/" + r.LogicalID, nil
	}
	return "cfn:" + r.Stack + "/" + r.LogicalID + "." + attr, nil
}

// Literals is the app's Literals with the default placeholders.
func (a *App) Literals() Literals { return Literals{Physical: Physical{App: a}} }

// String is v, a property value of a resource of stack, resolved with the
// app's Literals ("" when it cannot be).
func (a *App) String(stack string, v any) string {
	s, _ := a.ResolveString(stack, v, a.Literals())
	return s
}

// Find is the resource of the app that v, a property value of a resource
// of stack, names: a Ref or Fn::GetAtt of it (also through an
// Fn::ImportValue), or a string (literal, or built with Fn::Join or
// Fn::Sub) that is its physical name, ARN or URL, or a Lambda function's
// ARN with a qualifier; else, for a value derived with intrinsics (an
// alias's name selected out of its ARN), the first resource it references.
// Nil when v names no resource of the app.
func (a *App) Find(stack string, v any) *Resource {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, fn := range []string{"Ref", "Fn::GetAtt"} {
			if arg, ok := m[fn]; ok {
				ref, _ := reference(fn, arg)
				r, _ := a.Resource(stack, ref.LogicalID)
				return r
			}
		}
		if name, ok := m["Fn::ImportValue"].(string); ok {
			if e, ok := a.exports[name]; ok {
				return a.Find(e.stack, e.value)
			}
			return nil
		}
	}
	if v == nil {
		return nil
	}
	if a.index == nil {
		a.buildIndex()
	}
	s, err := a.ResolveString(stack, v, a.Literals())
	if r := a.index[s]; err == nil && r != nil {
		return r
	}
	// A function's ARN with a version or alias.
	if parts := strings.Split(s, ":"); err == nil && len(parts) == 8 && parts[2] == "lambda" {
		return a.index[strings.Join(parts[:7], ":")]
	}
	return a.firstReference(stack, v)
}

// firstReference is the first resource v's intrinsics reference.
func (a *App) firstReference(stack string, v any) *Resource {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if k == "Ref" || k == "Fn::GetAtt" || k == "Fn::ImportValue" {
				if r := a.Find(stack, map[string]any{k: x[k]}); r != nil {
					return r
				}
			} else if r := a.firstReference(stack, x[k]); r != nil {
				return r
			}
		}
	case []any:
		for _, e := range x {
			if r := a.firstReference(stack, e); r != nil {
				return r
			}
		}
	}
	return nil
}

// buildIndex maps every physical name, Ref value, ARN and URL to its
// resource.
func (a *App) buildIndex() {
	a.index = map[string]*Resource{}
	p := Physical{App: a}
	for _, r := range a.Resources("") {
		if _, ok := nameProps[r.Type]; !ok {
			continue
		}
		name, _ := p.Name(r) // "" when it cannot be named
		ref, _ := p.Ref(r)
		arn, _ := p.GetAtt(r, "Arn")
		for _, s := range []string{name, ref, arn} {
			if _, dup := a.index[s]; s != "" && !dup {
				a.index[s] = r
			}
		}
		if r.Type == "AWS::Logs::LogGroup" && arn != "" {
			a.index[strings.TrimSuffix(arn, ":*")] = r
		}
	}
}

// Function is the function v names, through an alias or version.
func (a *App) Function(stack string, v any) *Resource {
	for range 4 {
		r := a.Find(stack, v)
		if r == nil {
			return nil
		}
		switch r.Type {
		case "AWS::Lambda::Function":
			return r
		case "AWS::Lambda::Alias", "AWS::Lambda::Version":
			stack, v = r.Stack, r.Properties["FunctionName"]
		default:
			return nil
		}
	}
	return nil
}
