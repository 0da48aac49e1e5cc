package cfnlocal

import (
	"errors"
	"fmt"
	"strings"
)

// Physical gives references the meaning AWS gives them, for checks that
// compare names and ARNs across resources and stacks (a policy naming a
// queue, a rule targeting it, a guard admitting a role): a resource's
// physical name is its name property, or "<stack>-<logical id>" where
// CloudFormation would generate one, and its ARN or URL is the one AWS
// builds from that name in the app's account and region. A type or
// attribute it does not know is an error naming it.
type Physical struct {
	App *App
}

var _ Locals = Physical{}

// nameProps is the property that names each type Physical knows.
var nameProps = map[string]string{
	"AWS::SQS::Queue":                  "QueueName",
	"AWS::SNS::Topic":                  "TopicName",
	"AWS::IAM::Role":                   "RoleName",
	"AWS::Events::Rule":                "Name",
	"AWS::Events::EventBus":            "Name",
	"AWS::CloudWatch::Alarm":           "AlarmName",
	"AWS::Lambda::Function":            "FunctionName",
	"AWS::StepFunctions::StateMachine": "StateMachineName",
	"AWS::Pipes::Pipe":                 "Name",
	"AWS::KMS::Key":                    "",
	"AWS::Logs::LogGroup":              "LogGroupName",
	"AWS::DynamoDB::Table":             "TableName",
	"AWS::Scheduler::Schedule":         "Name",
	"AWS::Events::ApiDestination":      "Name",
	"AWS::Events::Connection":          "Name",
}

// Name is r's physical name.
func (p Physical) Name(r *Resource) (string, error) {
	prop, ok := nameProps[r.Type]
	if !ok {
		return "", fmt.Errorf("%w: no physical name for %s (%s)", ErrUnresolvable, r.Type, r.Path())
	}
	if prop != "" {
		if v, ok := r.Properties[prop]; ok {
			return p.App.ResolveString(r.Stack, v, p)
		}
	}
	return r.Stack + "-" + r.LogicalID, nil
}

func (p Physical) arn(service, region, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", p.App.Partition, service, region, p.App.Account, resource)
}

// Ref is what {"Ref": r} returns in AWS.
func (p Physical) Ref(r *Resource) (string, error) {
	name, err := p.Name(r)
	if err != nil {
		return "", err
	}
	switch r.Type {
	case "AWS::SQS::Queue":
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", p.App.Region, p.App.Account, name), nil
	case "AWS::SNS::Topic", "AWS::StepFunctions::StateMachine":
		return p.GetAtt(r, "Arn")
	case "AWS::KMS::Key":
		return r.LogicalID, nil
	}
	return name, nil
}

// GetAtt is what {"Fn::GetAtt": [r, attr]} returns in AWS.
func (p Physical) GetAtt(r *Resource, attr string) (string, error) {
	name, err := p.Name(r)
	if err != nil {
		return "", err
	}
	region := p.App.Region
	switch r.Type + "." + attr {
	case "AWS::SQS::Queue.Arn":
		return p.arn("sqs", region, name), nil
	case "AWS::SQS::Queue.QueueUrl":
		return p.Ref(r)
	case "AWS::SQS::Queue.QueueName", "AWS::SNS::Topic.TopicName", "AWS::Events::EventBus.Name", "AWS::StepFunctions::StateMachine.Name":
		return name, nil
	case "AWS::SNS::Topic.TopicArn", "AWS::SNS::Topic.Arn":
		return p.arn("sns", region, name), nil
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
			return p.arn("events", region, "rule/"+name), nil
		}
		return p.arn("events", region, "rule/"+bus+"/"+name), nil
	case "AWS::Events::EventBus.Arn":
		return p.arn("events", region, "event-bus/"+name), nil
	case "AWS::CloudWatch::Alarm.Arn":
		return p.arn("cloudwatch", region, "alarm:"+name), nil
	case "AWS::Lambda::Function.Arn":
		return p.arn("lambda", region, "function:"+name), nil
	case "AWS::StepFunctions::StateMachine.Arn":
		return p.arn("states", region, "stateMachine:"+name), nil
	case "AWS::Pipes::Pipe.Arn":
		return p.arn("pipes", region, "pipe/"+name), nil
	case "AWS::KMS::Key.Arn":
		return p.arn("kms", region, "key/"+r.LogicalID), nil
	case "AWS::Logs::LogGroup.Arn":
		return p.arn("logs", region, "log-group:"+name+":*"), nil
	case "AWS::DynamoDB::Table.Arn":
		return p.arn("dynamodb", region, "table/"+name), nil
	case "AWS::Events::ApiDestination.Arn":
		return p.arn("events", region, "api-destination/"+name), nil
	case "AWS::Events::Connection.Arn":
		return p.arn("events", region, "connection/"+name), nil
	case "AWS::Scheduler::Schedule.Arn":
		return p.arn("scheduler", region, "schedule/default/"+name), nil
	}
	return "", fmt.Errorf("%w: no meaning for Fn::GetAtt %s.%s (%s)", ErrUnresolvable, r.Type, attr, r.Path())
}

// Literals gives references the meaning Physical gives them and, for the
// resources Physical cannot name (subnets, security groups, ...), the
// literal Placeholder returns: attr is "" for a Ref, the attribute for a
// Fn::GetAtt. A check that never compares such values only carries them.
type Literals struct {
	Physical
	Placeholder func(r *Resource, attr string) string
}

var _ Locals = Literals{}

// Ref is Physical's Ref, or the placeholder.
func (l Literals) Ref(r *Resource) (string, error) {
	s, err := l.Physical.Ref(r)
	if errors.Is(err, ErrUnresolvable) {
		return l.Placeholder(r, ""), nil
	}
	return s, err
}

// GetAtt is Physical's GetAtt, or the placeholder.
func (l Literals) GetAtt(r *Resource, attr string) (string, error) {
	s, err := l.Physical.GetAtt(r, attr)
	if errors.Is(err, ErrUnresolvable) {
		return l.Placeholder(r, attr), nil
	}
	return s, err
}
