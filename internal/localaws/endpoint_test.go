package localaws

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The endpoint answers each target as its service does, a secret it was
// not told about with a value kept for later calls, a target it does not
// know with UnknownOperationException (a new call fails loudly), and a
// failing target with its error; every request is recorded.
func TestEndpointAnswersByTarget(t *testing.T) {
	e := NewEndpoint(t, nil)
	e.SetSecret("conocido", "valor")
	post := func(target, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/", strings.NewReader(body))
		req.Header.Set("X-Amz-Target", target)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		target, body string
		status       int
		want         string
	}{
		{"secretsmanager.GetSecretValue", `{"SecretId":"conocido"}`, 200, `"SecretString":"valor"`},
		{"secretsmanager.GetSecretValue", `{"SecretId":"nuevo"}`, 200, `"SecretString":"` + e.Secret("nuevo") + `"`},
		{"AWSEvents.PutEvents", `{"Entries":[{"Source":"s","DetailType":"d","Detail":"{}"},{}]}`, 200, `"FailedEntryCount":1`},
		{"AWSStepFunctions.StartExecution", `{"StateMachineArn":"arn:aws:states:r:a:stateMachine:m","Name":"n"}`, 200, `"executionArn":"arn:aws:states:r:a:execution:m:n"`},
		{"DynamoDB_20120810.PutItem", `{}`, 200, `{}`},
		{"AmazonSQS.SendMessage", `{"QueueUrl":"https://sqs.eu-west-1.amazonaws.com/333333333333/q","MessageBody":"hola"}`, 200, `"MD5OfMessageBody"`},
		{"AmazonSNS.Publish", `{}`, 400, "UnknownOperationException"},
	} {
		if status, body := post(c.target, c.body); status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s %s = %d %s, want %d with %s", c.target, c.body, status, body, c.status, c.want)
		}
	}
	e.Fail("AWSEvents.PutEvents", http.StatusServiceUnavailable, "ServiceUnavailable")
	if status, body := post("AWSEvents.PutEvents", `{"Entries":[{}]}`); status != 503 || !strings.Contains(body, "ServiceUnavailable") {
		t.Errorf("failing PutEvents = %d %s", status, body)
	}
	if n := len(e.Requests("")); n != 8 {
		t.Errorf("%d requests recorded, want 8", n)
	}
}
