package localaws

import (
	"bytes"
	"cmp"
	"context"
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
	"time"

	"github.com/google/uuid"
)

// Account and Region are what the local AWS's ARNs and URLs name.
const (
	Account = "333333333333"
	Region  = "eu-west-1"
)

// AWSRequest is one AWS request that reached the Endpoint.
type AWSRequest struct {
	// Target is the X-Amz-Target of a JSON-protocol call
	// ("secretsmanager.GetSecretValue"), or "METHOD path" of a REST one
	// ("POST /v2/email/outbound-emails").
	Target string
	Header http.Header
	Body   []byte
}

// JSON decodes the request's body into v, failing the test if it cannot.
func (r AWSRequest) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("localaws: %s body %s: %v", r.Target, r.Body, err)
	}
}

// Event is one PutEvents entry as accepted.
type Event struct {
	ID, EventBusName, Source, DetailType, Detail string
	Time                                         time.Time
	Resources                                    []string
}

// Envelope renders the event as EventBridge delivers it to targets.
func (e Event) Envelope(account, region string) map[string]any {
	var detail any = map[string]any{}
	_ = json.Unmarshal([]byte(e.Detail), &detail)
	return map[string]any{
		"version": "0", "id": e.ID, "detail-type": e.DetailType, "source": e.Source,
		"account": account, "time": e.Time.UTC().Format(time.RFC3339), "region": region,
		"resources": append([]string{}, e.Resources...), "detail": detail,
	}
}

// Router takes an accepted event (routing it to the bus's rules); an error
// fails the entry.
type Router interface {
	Route(ctx context.Context, e Event) error
}

// Execution is a started Step Functions execution.
type Execution struct {
	ARN, StateMachineARN, Name, Input string
	Start                             time.Time
}

// Executor runs a started execution (asynchronously: Start returns at once).
type Executor interface {
	Start(ctx context.Context, e Execution) error
}

// answers are the responses by target; a target not here gets
// UnknownOperationException, so a function that starts calling something
// new fails loudly. Targets ending in "*" match a prefix.
var answers = map[string]func(e *Endpoint, w http.ResponseWriter, r *http.Request, body []byte){
	"secretsmanager.GetSecretValue":   (*Endpoint).getSecretValue,
	"AWSStepFunctions.StartExecution": (*Endpoint).startExecution,
	"AWSEvents.PutEvents":             (*Endpoint).putEvents,
	"POST " + SESPath: func(e *Endpoint, w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, http.StatusOK, map[string]string{"MessageId": uuid.NewString()})
	},
	// The conditional writes and reads of the idempotency, send-record and
	// stock tables: a claim or write succeeds, a read finds nothing.
	"DynamoDB_20120810.PutItem":            emptyDynamoDB,
	"DynamoDB_20120810.UpdateItem":         emptyDynamoDB,
	"DynamoDB_20120810.DeleteItem":         emptyDynamoDB,
	"DynamoDB_20120810.GetItem":            emptyDynamoDB,
	"DynamoDB_20120810.TransactWriteItems": emptyDynamoDB,
	"AmazonSQS.*": func(e *Endpoint, w http.ResponseWriter, r *http.Request, body []byte) {
		if e.autoCreate {
			var in struct{ QueueUrl string }
			if json.Unmarshal(body, &in) == nil && in.QueueUrl != "" {
				_, _ = e.Queues.CreateQueue(path.Base(in.QueueUrl), QueueConfig{}) // exists: fine
			}
		}
		e.sqs.ServeHTTP(w, r)
	},
}

// emptyDynamoDB answers {} with the X-Amz-Crc32 DynamoDB sends (the SDK
// checks it).
func emptyDynamoDB(_ *Endpoint, w http.ResponseWriter, _ *http.Request, _ []byte) {
	body := []byte("{}")
	w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_, _ = w.Write(body)
}

// Endpoint is the local AWS's endpoint (AWS_ENDPOINT_URL): it records every
// request and answers it as the service does, over its wire protocol, so
// functions run with their real SDK clients: SQS by Queues, EventBridge
// PutEvents (each valid entry handed to Router; malformed or refused
// entries fail alone), Step Functions StartExecution (one execution per
// name and state machine, ExecutionAlreadyExists for a second; handed to
// Executor), Secrets Manager GetSecretValue, SES v2 SendEmail and
// DynamoDB's item calls (accepted; Forward sends a service elsewhere).
// Requests are not authenticated. Safe for concurrent use.
type Endpoint struct {
	// URL is the endpoint's base URL.
	URL string
	// Queues is the SQS behind the endpoint.
	Queues *SQS
	// Router and Executor, when set, take accepted events and executions.
	Router   Router
	Executor Executor
	// Now is the clock of events and executions (default time.Now).
	Now func() time.Time
	// KnownSecretsOnly answers ResourceNotFoundException for a secret not
	// set with SetSecret, instead of a random value kept for later calls.
	KnownSecretsOnly bool
	// NoLedger keeps no request (a long run).
	NoLedger bool

	sqs        http.Handler
	autoCreate bool
	mu         sync.Mutex
	requests   []AWSRequest
	secrets    map[string]string
	failing    map[string]failure
	forward    map[string]http.Handler // by target prefix
	executions map[string]bool         // by execution ARN
}

type failure struct {
	status int
	code   string
}

// NewEndpoint starts an Endpoint on queues, closed when the test ends; with
// queues nil, on a new SQS of Account and Region whose queues are created on
// first use.
func NewEndpoint(t testing.TB, queues *SQS) *Endpoint {
	t.Helper()
	e := &Endpoint{Queues: queues, secrets: map[string]string{}, executions: map[string]bool{}, forward: map[string]http.Handler{}}
	if queues == nil {
		e.Queues, e.autoCreate = NewSQS(SQSConfig{Region: Region, Account: Account}), true
	}
	e.sqs = e.Queues.Handler()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	return e
}

// Forward makes e send every request whose target starts with prefix
// ("DynamoDB_20120810.", "POST /v2/email/"), once recorded, to the server at
// url (dynalite, the SES fake) instead of answering it.
func (e *Endpoint) Forward(t testing.TB, prefix, url string) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatalf("localaws: endpoint %q: %v", url, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forward[prefix] = httputil.NewSingleHostReverseProxy(u)
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
// SetSecret, otherwise (unless KnownSecretsOnly) a random one chosen on
// first use and kept, so a secret the template names and the test does not
// know still answers.
func (e *Endpoint) Secret(id string) string {
	v, _ := e.secret(id)
	return v
}

func (e *Endpoint) secret(id string) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := e.secrets[id]
	if !ok && !e.KnownSecretsOnly {
		v, ok = "secreto-"+uuid.NewString(), true // 44 characters: long enough for a signing key
		e.secrets[id] = v
	}
	return v, ok
}

// Requests returns the requests with target (every request when target is
// empty), in arrival order.
func (e *Endpoint) Requests(target string) []AWSRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []AWSRequest
	for _, r := range e.requests {
		if target == "" || r.Target == target {
			out = append(out, r)
		}
	}
	return out
}

// Targets returns the distinct targets seen, sorted.
func (e *Endpoint) Targets() []string {
	var out []string
	for _, r := range e.Requests("") {
		out = append(out, r.Target)
	}
	slices.Sort(out)
	return slices.Compact(out)
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

func (e *Endpoint) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Endpoint) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 4<<20))
	req.Body = io.NopCloser(bytes.NewReader(body))
	target := req.Header.Get("X-Amz-Target")
	if target == "" {
		target = req.Method + " " + req.URL.Path
	}
	e.mu.Lock()
	if !e.NoLedger {
		e.requests = append(e.requests, AWSRequest{Target: target, Header: req.Header.Clone(), Body: body})
	}
	f, failing := e.failing[target]
	var forward http.Handler
	for prefix, h := range e.forward {
		if strings.HasPrefix(target, prefix) {
			forward = h
		}
	}
	e.mu.Unlock()
	a, ok := answers[target]
	if i := strings.IndexByte(target, '.'); !ok && i > 0 {
		a, ok = answers[target[:i+1]+"*"]
	}
	switch {
	case failing:
		writeFailure(w, f.status, f.code, "localaws: "+target+" fails")
	case forward != nil:
		forward.ServeHTTP(w, req)
	case !ok:
		writeFailure(w, http.StatusBadRequest, "UnknownOperationException", "localaws: no answer for "+target)
	default:
		a(e, w, req, body)
	}
}

func (e *Endpoint) getSecretValue(w http.ResponseWriter, _ *http.Request, body []byte) {
	var in struct{ SecretId string }
	_ = json.Unmarshal(body, &in)
	v, ok := e.secret(in.SecretId)
	if !ok {
		writeFailure(w, 400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ARN": in.SecretId, "Name": in.SecretId, "SecretString": v,
		"VersionId": SecretVersion, "VersionStages": []string{"AWSCURRENT"}})
}

func (e *Endpoint) putEvents(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		Entries []struct {
			EventBusName, Source, DetailType, Detail string
			Time                                     *float64
			Resources                                []string
		}
	}
	if err := json.Unmarshal(body, &in); err != nil || len(in.Entries) == 0 || len(in.Entries) > 10 {
		writeFailure(w, 400, "ValidationException", fmt.Sprintf("%d entries (1..10), %v", len(in.Entries), err))
		return
	}
	type result struct {
		EventId, ErrorCode, ErrorMessage string `json:",omitempty"`
	}
	var out struct {
		FailedEntryCount int
		Entries          []result
	}
	for _, x := range in.Entries {
		ev := Event{ID: uuid.NewString(), EventBusName: x.EventBusName, Source: x.Source, DetailType: x.DetailType, Detail: x.Detail, Time: e.now(), Resources: x.Resources}
		if x.Time != nil {
			sec := int64(*x.Time)
			ev.Time = time.Unix(sec, int64((*x.Time-float64(sec))*1e9))
		}
		code, err := "InternalFailure", error(nil)
		switch {
		case x.Source == "" || x.DetailType == "" || x.Detail == "":
			err = fmt.Errorf("Source, DetailType and Detail are required")
		case !json.Valid([]byte(x.Detail)):
			code, err = "MalformedDetail", fmt.Errorf("Detail is not valid JSON")
		case e.Router != nil:
			err = e.Router.Route(r.Context(), ev)
		}
		if err != nil {
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: code, ErrorMessage: err.Error()})
			continue
		}
		out.Entries = append(out.Entries, result{EventId: ev.ID})
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Endpoint) startExecution(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct{ StateMachineArn, Name, Input string }
	if err := json.Unmarshal(body, &in); err != nil || in.StateMachineArn == "" {
		writeFailure(w, 400, "InvalidArn", fmt.Sprintf("stateMachineArn is required (%v)", err))
		return
	}
	in.Name, in.Input = cmp.Or(in.Name, uuid.NewString()), cmp.Or(in.Input, "{}")
	if len(in.Name) > 80 || !json.Valid([]byte(in.Input)) {
		writeFailure(w, 400, "InvalidExecutionInput", "name longer than 80 characters, or input not JSON")
		return
	}
	arn := strings.Replace(in.StateMachineArn, ":stateMachine:", ":execution:", 1) + ":" + in.Name
	e.mu.Lock()
	dup := e.executions[arn]
	e.executions[arn] = true
	e.mu.Unlock()
	if dup {
		// A standard workflow answers a repeat with the same input by
		// returning the running execution; any other repeat (finished, or
		// different input) is ExecutionAlreadyExists. Locally every repeat
		// is the latter, the stricter answer.
		writeFailure(w, 400, "ExecutionAlreadyExists", "Execution Already Exists: '"+arn+"'")
		return
	}
	x := Execution{ARN: arn, StateMachineARN: in.StateMachineArn, Name: in.Name, Input: in.Input, Start: e.now()}
	if e.Executor != nil {
		if err := e.Executor.Start(context.WithoutCancel(r.Context()), x); err != nil {
			writeFailure(w, 500, "InternalFailure", err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"executionArn": arn, "startDate": float64(x.Start.UnixMilli()) / 1000})
}

// WantRequest fails the test unless a request with target reached e whose
// body contains every one of parts.
func WantRequest(t testing.TB, e *Endpoint, target string, parts ...string) AWSRequest {
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
	return AWSRequest{}
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
