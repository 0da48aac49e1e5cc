// Package awsfake serves the few AWS API operations the project's Lambda
// functions call besides SQS and DynamoDB, over their real wire protocols,
// so a local run builds the functions with their real SDK clients pointed
// here (AWS_ENDPOINT_URL_<SERVICE>): EventBridge PutEvents (each accepted
// entry goes to a Router; a router error fails the entry), Step Functions
// StartExecution (one execution per name and state machine,
// ExecutionAlreadyExists for a second; handed to an Executor) and Secrets
// Manager GetSecretValue from a map. Requests are not authenticated;
// anything else is UnknownOperationException, so a function that starts
// calling something new fails loudly instead of silently doing nothing.
package awsfake

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event is one PutEvents entry as accepted.
type Event struct {
	ID           string
	EventBusName string
	Source       string
	DetailType   string
	Detail       string
	Time         time.Time
	Resources    []string
}

// Envelope renders the event as EventBridge delivers it to targets.
func (e Event) Envelope(account, region string) map[string]any {
	var detail any = map[string]any{}
	_ = json.Unmarshal([]byte(e.Detail), &detail)
	res := e.Resources
	if res == nil {
		res = []string{}
	}
	return map[string]any{
		"version": "0", "id": e.ID, "detail-type": e.DetailType, "source": e.Source,
		"account": account, "time": e.Time.UTC().Format(time.RFC3339), "region": region,
		"resources": res, "detail": detail,
	}
}

// Router takes an accepted event (routing it to the bus's rules).
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

// Server is the fake. Set its fields before serving.
type Server struct {
	Account, Region string
	Router          Router
	Executor        Executor
	// Secrets maps a secret ARN or name to its SecretString.
	Secrets map[string]string
	// Now is the clock for event and execution times. Default time.Now.
	Now func() time.Time

	mu         sync.Mutex
	executions map[string]Execution // by execution ARN
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		writeError(w, 400, "SerializationException", err.Error())
		return
	}
	switch target {
	case "AWSEvents.PutEvents":
		s.putEvents(w, r, body)
	case "AWSStepFunctions.StartExecution":
		s.startExecution(w, r, body)
	case "secretsmanager.GetSecretValue":
		s.getSecretValue(w, body)
	default:
		writeError(w, 400, "UnknownOperationException", "awsfake does not serve "+strconv.Quote(target))
	}
}

func (s *Server) putEvents(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		Entries []struct {
			EventBusName, Source, DetailType, Detail string
			Time                                     *float64
			Resources                                []string
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, 400, "SerializationException", err.Error())
		return
	}
	if len(in.Entries) == 0 || len(in.Entries) > 10 {
		writeError(w, 400, "ValidationException", fmt.Sprintf("%d entries (1..10)", len(in.Entries)))
		return
	}
	type result struct {
		EventId      string `json:",omitempty"`
		ErrorCode    string `json:",omitempty"`
		ErrorMessage string `json:",omitempty"`
	}
	out := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	for _, e := range in.Entries {
		ev := Event{ID: newID(), EventBusName: e.EventBusName, Source: e.Source, DetailType: e.DetailType, Detail: e.Detail, Time: s.now(), Resources: e.Resources}
		if e.Time != nil {
			sec := int64(*e.Time)
			ev.Time = time.Unix(sec, int64((*e.Time-float64(sec))*1e9))
		}
		var err error
		switch {
		case e.Source == "" || e.DetailType == "" || e.Detail == "":
			err = fmt.Errorf("Source, DetailType and Detail are required")
		case !json.Valid([]byte(e.Detail)):
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: "MalformedDetail", ErrorMessage: "Detail is not valid JSON"})
			continue
		case s.Router == nil:
			err = fmt.Errorf("no router")
		default:
			err = s.Router.Route(r.Context(), ev)
		}
		if err != nil {
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: "InternalFailure", ErrorMessage: err.Error()})
			continue
		}
		out.Entries = append(out.Entries, result{EventId: ev.ID})
	}
	writeJSON(w, out, "application/x-amz-json-1.1")
}

func (s *Server) startExecution(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		StateMachineArn string `json:"stateMachineArn"`
		Name            string `json:"name"`
		Input           string `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, 400, "SerializationException", err.Error())
		return
	}
	if in.StateMachineArn == "" {
		writeError(w, 400, "InvalidArn", "stateMachineArn is required")
		return
	}
	if in.Name == "" {
		in.Name = newID()
	}
	if len(in.Name) > 80 {
		writeError(w, 400, "InvalidName", "name longer than 80 characters")
		return
	}
	in.Input = cmp.Or(in.Input, "{}")
	if !json.Valid([]byte(in.Input)) {
		writeError(w, 400, "InvalidExecutionInput", "input is not JSON")
		return
	}
	arn := strings.Replace(in.StateMachineArn, ":stateMachine:", ":execution:", 1) + ":" + in.Name
	s.mu.Lock()
	if s.executions == nil {
		s.executions = map[string]Execution{}
	}
	if _, dup := s.executions[arn]; dup {
		s.mu.Unlock()
		// A standard workflow answers a repeat with the same input by
		// returning the running execution; any other repeat (finished, or
		// different input) is ExecutionAlreadyExists. Locally every repeat
		// is the latter, the stricter answer.
		writeError(w, 400, "ExecutionAlreadyExists", "Execution Already Exists: '"+arn+"'")
		return
	}
	e := Execution{ARN: arn, StateMachineARN: in.StateMachineArn, Name: in.Name, Input: in.Input, Start: s.now()}
	s.executions[arn] = e
	s.mu.Unlock()
	if s.Executor == nil {
		writeError(w, 500, "InternalFailure", "no executor")
		return
	}
	if err := s.Executor.Start(context.WithoutCancel(r.Context()), e); err != nil {
		writeError(w, 500, "InternalFailure", err.Error())
		return
	}
	writeJSON(w, map[string]any{"executionArn": arn, "startDate": float64(e.Start.UnixMilli()) / 1000}, "application/x-amz-json-1.0")
}

func (s *Server) getSecretValue(w http.ResponseWriter, body []byte) {
	var in struct{ SecretId string }
	if err := json.Unmarshal(body, &in); err != nil {
		writeError(w, 400, "SerializationException", err.Error())
		return
	}
	v, ok := s.Secrets[in.SecretId]
	if !ok {
		writeError(w, 400, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	writeJSON(w, map[string]any{"ARN": in.SecretId, "Name": in.SecretId, "SecretString": v, "VersionId": "v1",
		"VersionStages": []string{"AWSCURRENT"}}, "application/x-amz-json-1.1")
}

func writeJSON(w http.ResponseWriter, v any, contentType string) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": code, "message": msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
