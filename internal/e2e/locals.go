package e2e

import (
	"fmt"
	"net"
	"strings"

	"github.com/mercadofresco/integration/synthesized"
)

// locals gives every resource the run reads a local meaning (synthesized.Locals):
// queues are the SQS fake's, tables dynalite's, the Valkey cache and the RDS
// proxy the local Redis and PostgreSQL, and the rest are ARNs in the
// templates' account and region that the fakes recognise. A reference to a
// type with no local meaning is an error, never a guess.
type locals struct {
	w *World
}

func (l locals) arn(service, resource string) string {
	return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, l.w.app.Region, l.w.app.Account, resource)
}

func physicalName(r *synthesized.Resource, prop string) string {
	if s, ok := r.Prop(prop).(string); ok && s != "" {
		return s
	}
	return strings.ToLower(r.LogicalID)
}

func (l locals) Ref(r *synthesized.Resource) (string, error) {
	switch r.Type {
	case "AWS::SQS::Queue":
		q, ok := l.w.queueByResource[r]
		if !ok {
			return "", fmt.Errorf("queue %s not created", r.Path())
		}
		return q.URL, nil
	case "AWS::Lambda::Function":
		return physicalName(r, "FunctionName"), nil
	case "AWS::DynamoDB::Table":
		return physicalName(r, "TableName"), nil
	case "AWS::SNS::Topic":
		return l.arn("sns", physicalName(r, "TopicName")), nil
	case "AWS::SecretsManager::Secret":
		return l.arn("secretsmanager", "secret:"+physicalName(r, "Name")+"-e2e000"), nil
	case "AWS::SecretsManager::SecretTargetAttachment":
		return l.w.app.ResolveString(r.Stack, r.Prop("SecretId"), l)
	case "AWS::StepFunctions::StateMachine":
		return l.arn("states", "stateMachine:"+physicalName(r, "StateMachineName")), nil
	case "AWS::Events::EventBus":
		return physicalName(r, "Name"), nil
	case "AWS::SES::ConfigurationSet":
		return physicalName(r, "Name"), nil
	}
	return "", fmt.Errorf("no local meaning for Ref of %s (%s)", r.Type, r.Path())
}

func (l locals) GetAtt(r *synthesized.Resource, attr string) (string, error) {
	switch r.Type + "." + attr {
	case "AWS::SQS::Queue.Arn":
		q, ok := l.w.queueByResource[r]
		if !ok {
			return "", fmt.Errorf("queue %s not created", r.Path())
		}
		return q.ARN, nil
	case "AWS::SQS::Queue.QueueName":
		q, ok := l.w.queueByResource[r]
		if !ok {
			return "", fmt.Errorf("queue %s not created", r.Path())
		}
		return q.Name, nil
	case "AWS::Lambda::Function.Arn":
		return l.arn("lambda", "function:"+physicalName(r, "FunctionName")), nil
	case "AWS::DynamoDB::Table.Arn":
		return l.arn("dynamodb", "table/"+physicalName(r, "TableName")), nil
	case "AWS::DynamoDB::Table.StreamArn":
		return l.arn("dynamodb", "table/"+physicalName(r, "TableName")+"/stream/e2e"), nil
	case "AWS::SNS::Topic.TopicName":
		return physicalName(r, "TopicName"), nil
	case "AWS::StepFunctions::StateMachine.Name":
		return physicalName(r, "StateMachineName"), nil
	case "AWS::Events::EventBus.Arn":
		return l.arn("events", "event-bus/"+physicalName(r, "Name")), nil
	case "AWS::Events::EventBus.Name":
		return physicalName(r, "Name"), nil
	case "AWS::Events::ApiDestination.Arn":
		return l.arn("events", "api-destination/"+physicalName(r, "Name")+"/e2e"), nil
	case "AWS::Events::Connection.Arn":
		return l.arn("events", "connection/"+physicalName(r, "Name")+"/e2e"), nil
	case "AWS::KMS::Key.Arn":
		return l.arn("kms", "key/"+r.LogicalID), nil
	case "AWS::Logs::LogGroup.Arn":
		return l.arn("logs", "log-group:"+physicalName(r, "LogGroupName")+":*"), nil
	case "AWS::IAM::Role.Arn":
		return fmt.Sprintf("arn:aws:iam::%s:role/%s", l.w.app.Account, r.LogicalID), nil
	case "AWS::RDS::DBProxy.Endpoint":
		return l.w.pgHost, nil
	case "AWS::ElastiCache::ServerlessCache.Endpoint.Address":
		host, _, err := net.SplitHostPort(l.w.redis.Addr)
		return host, err
	case "AWS::ElastiCache::ServerlessCache.Endpoint.Port":
		_, port, err := net.SplitHostPort(l.w.redis.Addr)
		return port, err
	}
	return "", fmt.Errorf("no local meaning for Fn::GetAtt %s.%s (%s)", r.Type, attr, r.Path())
}
