package localaws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
)

const maxRequestBytes = 2 << 20

type operation func(ctx context.Context, body []byte) (any, error)

// op decodes a request into the SDK's input type and calls the fake.
func op[In, Out any](call func(context.Context, *In, ...func(*sqs.Options)) (*Out, error)) operation {
	return func(ctx context.Context, body []byte) (any, error) {
		in := new(In)
		if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, in); err != nil {
				return nil, &smithy.GenericAPIError{Code: "SerializationException", Message: err.Error(), Fault: smithy.FaultClient}
			}
		}
		return call(ctx, in)
	}
}

// Handler serves the SQS over HTTP in the SQS JSON protocol (AWS JSON 1.0,
// X-Amz-Target: AmazonSQS.<Operation>), so a program using the SDK's SQS
// client with an endpoint override talks to it (tests run operator tools and
// Lambda mains as processes). Requests decode into the SDK's own input types
// and the answers encode as they are; an error (an SDK error type or a
// smithy.APIError) goes back with its code, so the client builds the same
// typed error. Requests are not authenticated. Long polling returns at once.
func (f *SQS) Handler() http.Handler {
	ops := map[string]operation{
		"SendMessage":             op(f.SendMessage),
		"SendMessageBatch":        op(f.SendMessageBatch),
		"ReceiveMessage":          op(f.ReceiveMessage),
		"DeleteMessage":           op(f.DeleteMessage),
		"ChangeMessageVisibility": op(f.ChangeMessageVisibility),
		"GetQueueAttributes":      op(f.GetQueueAttributes),
		"GetQueueUrl":             op(f.GetQueueUrl),
		"StartMessageMoveTask":    op(f.StartMessageMoveTask),
		"ListMessageMoveTasks":    op(f.ListMessageMoveTasks),
		"ListDeadLetterSourceQueues": func(ctx context.Context, body []byte) (any, error) {
			out, err := op(f.ListDeadLetterSourceQueues)(ctx, body)
			if err != nil {
				return nil, err
			}
			// The one member whose wire name is not its Go name.
			return map[string]any{"queueUrls": out.(*sqs.ListDeadLetterSourceQueuesOutput).QueueUrls}, nil
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
		call, ok := ops[name]
		if r.Method != http.MethodPost || !ok {
			writeError(w, &smithy.GenericAPIError{Code: "UnsupportedOperation", Message: "want POST with X-Amz-Target: AmazonSQS.<a served operation>", Fault: smithy.FaultClient})
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
		var out any
		if err == nil {
			out, err = call(r.Context(), body)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// writeJSON writes v with a Content-Length (a chunked body has made the
// SDK's client retry a ReceiveMessage whose response it had already
// half-read, leaving the first delivery's messages in flight).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"__type":"InternalError"}`)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b) // the client went away: nothing to do
}

// writeError answers err with its SQS code (InternalError when it has none).
func writeError(w http.ResponseWriter, err error) {
	code, status := "InternalError", http.StatusInternalServerError
	var api smithy.APIError
	if errors.As(err, &api) {
		code = api.ErrorCode()
		if api.ErrorFault() != smithy.FaultServer {
			status = http.StatusBadRequest
		}
	}
	msg := err.Error()
	if api != nil {
		msg = api.ErrorMessage()
	}
	writeFailure(w, status, code, msg)
}

// writeFailure answers status with an AWS error code.
func writeFailure(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Amzn-ErrorType", code)
	writeJSON(w, status, map[string]string{"__type": code, "message": msg})
}
