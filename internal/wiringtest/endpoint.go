package wiringtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mercadofresco/integration/internal/localaws"
)

// Request is one AWS request that reached the Endpoint.
type Request struct {
	// Target is the X-Amz-Target of a JSON-protocol call
	// ("secretsmanager.GetSecretValue"), or "METHOD path" of a REST one
	// ("POST /v2/email/outbound-emails").
	Target string
	Header http.Header
	Body   []byte
}

// JSON decodes the request's body into v, failing the test if it cannot.
func (r Request) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("wiringtest: %s body %s: %v", r.Target, r.Body, err)
	}
}

// answer writes the service's response to r.
type answer func(e *Endpoint, w http.ResponseWriter, r Request)

// answers are the responses by target; a target not here gets
// UnknownOperationException, so a function that starts calling something
// new fails its wiring test loudly. Targets ending in "*" match a prefix.
var answers = map[string]answer{
	"secretsmanager.GetSecretValue": func(e *Endpoint, w http.ResponseWriter, r Request) {
		var in struct{ SecretId string }
		_ = json.Unmarshal(r.Body, &in)
		writeJSON(w, "1.1", map[string]any{"ARN": in.SecretId, "Name": in.SecretId, "SecretString": e.Secret(in.SecretId),
			"VersionId": SecretVersion, "VersionStages": []string{"AWSCURRENT"}})
	},
	"AWSStepFunctions.StartExecution": func(e *Endpoint, w http.ResponseWriter, r Request) {
		var in struct{ StateMachineArn, Name string }
		_ = json.Unmarshal(r.Body, &in)
		arn := strings.Replace(in.StateMachineArn, ":stateMachine:", ":execution:", 1) + ":" + in.Name
		writeJSON(w, "1.0", map[string]any{"executionArn": arn, "startDate": 1764583200})
	},
	"AWSEvents.PutEvents": func(e *Endpoint, w http.ResponseWriter, r Request) {
		var in struct{ Entries []json.RawMessage }
		_ = json.Unmarshal(r.Body, &in)
		out := make([]map[string]string, len(in.Entries))
		for i := range out {
			out[i] = map[string]string{"EventId": newID()}
		}
		writeJSON(w, "1.1", map[string]any{"FailedEntryCount": 0, "Entries": out})
	},
	"POST /v2/email/outbound-emails": func(e *Endpoint, w http.ResponseWriter, r Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"MessageId":%q}`, newID())
	},
	// The conditional writes and reads of the idempotency, send-record and
	// stock tables: a claim or write succeeds, a read finds nothing.
	"DynamoDB_20120810.PutItem":            emptyDynamoDB,
	"DynamoDB_20120810.UpdateItem":         emptyDynamoDB,
	"DynamoDB_20120810.DeleteItem":         emptyDynamoDB,
	"DynamoDB_20120810.GetItem":            emptyDynamoDB,
	"DynamoDB_20120810.TransactWriteItems": emptyDynamoDB,
	"AmazonSQS.*": func(e *Endpoint, w http.ResponseWriter, r Request) {
		var in struct{ QueueUrl string }
		_ = json.Unmarshal(r.Body, &in)
		e.ensureQueue(in.QueueUrl)
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(r.Body))
		req.Header = r.Header.Clone()
		e.sqs.ServeHTTP(w, req)
	},
}

// emptyDynamoDB answers {} with the X-Amz-Crc32 DynamoDB sends (the SDK
// checks it).
func emptyDynamoDB(_ *Endpoint, w http.ResponseWriter, _ Request) {
	body := []byte("{}")
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_, _ = w.Write(body)
}

// Endpoint is a local AWS endpoint that records every request and answers
// it as the service does (see answers). SQS requests are served by an
// local SQS (internal/localaws) whose queues are created on first use. Safe for
// concurrent use.
type Endpoint struct {
	// URL is the endpoint's base URL (AWS_ENDPOINT_URL).
	URL string
	// Queues is the SQS fake behind the endpoint (inspect what was sent).
	Queues *localaws.SQS

	sqs      http.Handler
	mu       sync.Mutex
	requests []Request
	secrets  map[string]string
	failing  map[string]failure
	dynamodb http.Handler
}

// ForwardDynamoDB makes e send every DynamoDB request, once recorded, to
// the DynamoDB-compatible server at url (a dynalitetest server) instead of
// answering it, for a test whose function reads back what it wrote.
func (e *Endpoint) ForwardDynamoDB(t testing.TB, url string) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatalf("wiringtest: DynamoDB endpoint %q: %v", url, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dynamodb = httputil.NewSingleHostReverseProxy(u)
}

// NewEndpoint starts an Endpoint, closed when the test ends.
func NewEndpoint(t testing.TB) *Endpoint {
	t.Helper()
	q := localaws.NewSQS(localaws.SQSConfig{Region: Region, Account: Account})
	e := &Endpoint{Queues: q, sqs: q.Handler(), secrets: map[string]string{}}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	return e
}

// SecretVersion is the VersionId of every secret value the endpoint
// answers, whichever stage is asked for (a secret never rotated).
const SecretVersion = "v1"

// SetSecret makes GetSecretValue of id answer value.
func (e *Endpoint) SetSecret(id, value string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.secrets[id] = value
}

// Secret is the value GetSecretValue of id answers: the one set with
// SetSecret, otherwise a random one chosen on first use and kept (so a
// secret the template names and the test does not know still answers).
func (e *Endpoint) Secret(id string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.secrets[id]
	if !ok {
		v = "secreto-" + newID() + newID() // 40 characters: long enough for a signing key
		e.secrets[id] = v
	}
	return v
}

// Requests returns the requests with target (every request when target is
// empty), in arrival order.
func (e *Endpoint) Requests(target string) []Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Request
	for _, r := range e.requests {
		if target == "" || r.Target == target {
			out = append(out, r)
		}
	}
	return out
}

// Targets returns the distinct targets seen, sorted.
func (e *Endpoint) Targets() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, r := range e.requests {
		if !slices.Contains(out, r.Target) {
			out = append(out, r.Target)
		}
	}
	slices.Sort(out)
	return out
}

// ensureQueue creates the queue url names in the SQS fake unless it exists.
func (e *Endpoint) ensureQueue(url string) {
	if url == "" {
		return
	}
	_, _ = e.Queues.CreateQueue(path.Base(url), localaws.QueueConfig{}) // exists: fine
}

func (e *Endpoint) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	target := req.Header.Get("X-Amz-Target")
	if target == "" {
		target = req.Method + " " + req.URL.Path
	}
	r := Request{Target: target, Header: req.Header.Clone(), Body: body}
	e.mu.Lock()
	e.requests = append(e.requests, r)
	f, failing := e.failing[target]
	forward := e.dynamodb
	e.mu.Unlock()
	if forward != nil && strings.HasPrefix(target, "DynamoDB_20120810.") {
		req.Body = io.NopCloser(bytes.NewReader(body))
		forward.ServeHTTP(w, req)
		return
	}
	if failing {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", f.code)
		w.WriteHeader(f.status)
		fmt.Fprintf(w, `{"__type":%q,"message":"wiringtest: %s fails"}`, f.code, target)
		return
	}
	a, ok := answers[target]
	if !ok {
		if i := strings.IndexByte(target, '.'); i > 0 {
			a, ok = answers[target[:i+1]+"*"]
		}
	}
	if !ok {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"UnknownOperationException","message":"wiringtest: no answer for %s"}`, target)
		return
	}
	a(e, w, r)
}

func writeJSON(w http.ResponseWriter, version string, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/x-amz-json-"+version)
	_, _ = w.Write(b)
}

func newID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// WantRequest fails the test unless a request with target reached e whose
// body contains every one of parts.
func WantRequest(t testing.TB, e *Endpoint, target string, parts ...string) Request {
	t.Helper()
	rs := e.Requests(target)
	for _, r := range rs {
		ok := true
		for _, p := range parts {
			ok = ok && bytes.Contains(r.Body, []byte(p))
		}
		if ok {
			return r
		}
	}
	var bodies []string
	for _, r := range rs {
		bodies = append(bodies, string(r.Body))
	}
	t.Fatalf("no %s containing %q reached the endpoint (targets %v; bodies %v)", target, parts, e.Targets(), bodies)
	return Request{}
}

// WantDeadLetter fails the test unless the one DLQ of dlqURLs (a DLQ_URLS
// value: {"source queue": "DLQ URL"}) holds a message whose body is body,
// sent through SQS.
func WantDeadLetter(t testing.TB, e *Endpoint, dlqURLs, body string) {
	t.Helper()
	var routes map[string]string
	if err := json.Unmarshal([]byte(dlqURLs), &routes); err != nil || len(routes) != 1 {
		t.Fatalf("DLQ_URLS %s: want one route (%v)", dlqURLs, err)
	}
	for _, url := range routes {
		WantRequest(t, e, "AmazonSQS.SendMessage", `"QueueUrl":"`+url+`"`)
		msgs, err := e.Queues.Inspect(url)
		if err != nil {
			t.Fatalf("DLQ %s: %v", url, err)
		}
		for _, m := range msgs {
			if m.Body == body {
				return
			}
		}
		t.Fatalf("DLQ %s holds %d messages, none with body %q", url, len(msgs), body)
	}
}

// Fail makes every later request with target answer status with the AWS
// error code (as a throttled or failing service does).
func (e *Endpoint) Fail(target string, status int, code string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failing == nil {
		e.failing = map[string]failure{}
	}
	e.failing[target] = failure{status, code}
}

type failure struct {
	status int
	code   string
}
