// Package wiringtest builds a deployed function as its main does, from the
// environment the committed template gives it, with every AWS call going to
// a recording endpoint: DeployedEnv renders a function's Environment from
// test/testdata/snapshots (references resolved to the values CloudFormation
// would give them), Setenv installs it with AWS_ENDPOINT_URL pointing at an
// Endpoint and isolated credentials, and Endpoint records each AWS request
// and answers it as the service would (answers table-driven by target; SQS
// is served by sqsfake). The wiring tests of lambdas/* use it to prove by
// behaviour that each real client makes its requests.
package wiringtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Account and Region are what the rendered ARNs and URLs name.
const (
	Account = "333333333333"
	Region  = "eu-west-1"
)

// ModuleRoot is the directory holding go.mod, searched upwards from the
// working directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("wiringtest: no go.mod above the working directory")
		}
		dir = parent
	}
}

type template struct {
	Resources map[string]struct {
		Type       string
		Properties map[string]any
	}
	Outputs map[string]struct {
		Export *struct{ Name string }
		Value  any
	}
}

// snapshots are the committed templates of one environment.
type snapshots struct {
	t       testing.TB
	byStack map[string]*template
}

func loadSnapshots(t testing.TB, env string) *snapshots {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(ModuleRoot(t), "test", "testdata", "snapshots", "*-"+env+".template.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("wiringtest: no snapshots of %s: %v", env, err)
	}
	s := &snapshots{t: t, byStack: map[string]*template{}}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tpl template
		if err := json.Unmarshal(raw, &tpl); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		s.byStack[strings.TrimSuffix(filepath.Base(f), ".template.json")] = &tpl
	}
	return s
}

// DeployedEnv is the environment of the function named name in the
// committed snapshot of stack ("MercadoFresco-OrderFlow-prod"), each
// reference rendered as CloudFormation would resolve it: a queue's URL, a
// state machine's or secret's ARN, a table's, bus's or configuration set's
// name, an export of another stack of the same environment, the RDS Proxy
// and Valkey endpoints as their DNS names. It fails the test on a reference
// it cannot render.
func DeployedEnv(t testing.TB, stack, name string) map[string]string {
	t.Helper()
	env := stack[strings.LastIndex(stack, "-")+1:]
	s := loadSnapshots(t, env)
	tpl, ok := s.byStack[stack]
	if !ok {
		t.Fatalf("wiringtest: no snapshot of %s", stack)
	}
	for _, r := range tpl.Resources {
		if r.Type != "AWS::Lambda::Function" || r.Properties["FunctionName"] != name {
			continue
		}
		envBlock, _ := r.Properties["Environment"].(map[string]any)
		vars, _ := envBlock["Variables"].(map[string]any)
		out := map[string]string{}
		for k, v := range vars {
			out[k] = s.render(tpl, v)
		}
		return out
	}
	t.Fatalf("wiringtest: no function %s in %s", name, stack)
	return nil
}

// FunctionNames are the FunctionName of every AWS::Lambda::Function in the
// committed snapshots of env.
func FunctionNames(t testing.TB, env string) []string {
	t.Helper()
	var out []string
	for _, tpl := range loadSnapshots(t, env).byStack {
		for _, r := range tpl.Resources {
			if n, ok := r.Properties["FunctionName"].(string); ok && r.Type == "AWS::Lambda::Function" {
				out = append(out, n)
			}
		}
	}
	return out
}

func (s *snapshots) render(tpl *template, v any) string {
	s.t.Helper()
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	case map[string]any:
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			out := make([]string, len(parts))
			for i, p := range parts {
				out[i] = s.render(tpl, p)
			}
			return strings.Join(out, sep)
		}
		if id, ok := x["Ref"].(string); ok {
			return s.ref(tpl, id)
		}
		if ga, ok := x["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			id, _ := ga[0].(string)
			attr, _ := ga[1].(string)
			return s.getAtt(tpl, id, attr)
		}
		if name, ok := x["Fn::ImportValue"].(string); ok {
			for _, other := range s.byStack {
				for _, o := range other.Outputs {
					if o.Export != nil && o.Export.Name == name {
						return s.render(other, o.Value)
					}
				}
			}
			s.t.Fatalf("wiringtest: no stack exports %s", name)
		}
	}
	s.t.Fatalf("wiringtest: cannot render %v", v)
	return ""
}

func (s *snapshots) ref(tpl *template, id string) string {
	s.t.Helper()
	r, ok := tpl.Resources[id]
	if !ok {
		s.t.Fatalf("wiringtest: Ref to %s, not a resource", id)
	}
	prop := func(k string) string {
		if v, ok := r.Properties[k].(string); ok {
			return v
		}
		return strings.ToLower(id)
	}
	switch r.Type {
	case "AWS::StepFunctions::StateMachine":
		return fmt.Sprintf("arn:aws:states:%s:%s:stateMachine:%s", Region, Account, prop("StateMachineName"))
	case "AWS::SQS::Queue":
		return fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", Region, Account, prop("QueueName"))
	case "AWS::SecretsManager::Secret":
		return fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-AbCdEf", Region, Account, prop("Name"))
	case "AWS::SecretsManager::SecretTargetAttachment":
		// Its Ref is the ARN of the secret it attaches.
		return s.render(tpl, r.Properties["SecretId"])
	case "AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable":
		return prop("TableName")
	case "AWS::Events::EventBus":
		return prop("Name")
	case "AWS::SES::ConfigurationSet":
		return prop("Name")
	}
	s.t.Fatalf("wiringtest: cannot render a Ref to %s (%s)", id, r.Type)
	return ""
}

func (s *snapshots) getAtt(tpl *template, id, attr string) string {
	s.t.Helper()
	r, ok := tpl.Resources[id]
	if !ok {
		s.t.Fatalf("wiringtest: GetAtt of %s, not a resource", id)
	}
	switch {
	case r.Type == "AWS::RDS::DBProxy" && attr == "Endpoint":
		return fmt.Sprintf("%v.proxy-c0ffee.%s.rds.amazonaws.com", r.Properties["DBProxyName"], Region)
	case r.Type == "AWS::ElastiCache::ServerlessCache" && attr == "Endpoint.Address":
		return fmt.Sprintf("%v-c0ffee.serverless.euw1.cache.amazonaws.com", r.Properties["ServerlessCacheName"])
	case r.Type == "AWS::ElastiCache::ServerlessCache" && attr == "Endpoint.Port":
		return "6379"
	}
	s.t.Fatalf("wiringtest: cannot render GetAtt %s.%s (%s)", id, attr, r.Type)
	return ""
}

// Setenv sets env for the test and points every AWS SDK client at endpoint
// (AWS_ENDPOINT_URL) in Region, with static credentials and no shared
// configuration files, so nothing leaves the machine.
func Setenv(t testing.TB, env map[string]string, endpoint string) {
	t.Helper()
	tt, ok := t.(interface{ Setenv(k, v string) })
	if !ok {
		t.Fatal("wiringtest: Setenv needs a *testing.T")
	}
	for k, v := range env {
		tt.Setenv(k, v)
	}
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": Region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
	} {
		tt.Setenv(k, v)
	}
}

// SQSEvent is a Lambda event of bodies received once from the queue named
// queueName (message ids m-0, m-1, ...; on a FIFO queue each in message
// group "g").
func SQSEvent(queueName string, bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		id := fmt.Sprintf("m-%d", i)
		attrs := map[string]string{
			"ApproximateReceiveCount": "1",
			"SentTimestamp":           strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10),
		}
		if strings.HasSuffix(queueName, ".fifo") {
			attrs["MessageGroupId"] = "g"
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: id, ReceiptHandle: "rh-" + id, Body: b, EventSource: "aws:sqs", AWSRegion: Region,
			EventSourceARN: fmt.Sprintf("arn:aws:sqs:%s:%s:%s", Region, Account, queueName), Attributes: attrs,
		})
	}
	return ev
}

// PedidoConfirmado is the body of a PedidoConfirmado of order pedidoID,
// confirmed a second ago (inside every replay window), as the fan-out's
// queues carry it.
func PedidoConfirmado(pedidoID string) string {
	return fmt.Sprintf(`{"version":1,"pedido_id":%q,"cliente":{"id":"C-1","email":"ana@example.com"},`+
		`"lineas":[{"sku":"SKU-1","cantidad":2,"precio_centimos":250}],"total_centimos":500,"moneda":"EUR",`+
		`"referencia_cobro":"ch_1","confirmado_en":%q}`, pedidoID, time.Now().UTC().Add(-time.Second).Format(time.RFC3339))
}
