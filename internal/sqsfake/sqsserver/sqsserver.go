// Package sqsserver serves a sqsfake.Fake over HTTP in the SQS JSON protocol
// (AWS JSON 1.0, X-Amz-Target: AmazonSQS.<Operation>), so a program using the
// real aws-sdk-go-v2 SQS client with an endpoint override talks to the
// in-memory fake (tests run operator tools as processes and kill them). It
// speaks the operations of queue.AdminAPI; requests are not authenticated;
// errors carry SQS's error codes (QueueDoesNotExist with its query-compatible
// code, ReceiptHandleIsInvalid, MessageNotInflight, InvalidParameterValue,
// ResourceNotFoundException, AccessDenied, the batch errors), so the SDK
// builds the same typed errors. The batch operations are served when api is
// a *sqsfake.Fake. MD5OfMessageBody and MD5OfMessageAttributes are computed
// as SQS does (the SDK verifies the body's; the sqsfake conformance suite
// checks the attributes' against fauxqs). Long polling returns at once.
package sqsserver

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/lambdas/queue"
)

// ErrAccessDenied, returned by a sqsfake fault, is served as SQS's
// AccessDenied error (tests of "missing permission" messages).
var ErrAccessDenied = errors.New("sqsserver: access denied")

// Handler serves api (normally a *sqsfake.Fake) in the SQS JSON protocol.
func Handler(api queue.AdminAPI) http.Handler { return &handler{api: api} }

type handler struct{ api queue.AdminAPI }

const maxRequestBytes = 2 << 20

type attrJSON struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue,omitempty"`
	BinaryValue []byte `json:"BinaryValue,omitempty"`
}

type request struct {
	QueueURL               string              `json:"QueueUrl"`
	QueueName              string              `json:"QueueName"`
	MessageBody            string              `json:"MessageBody"`
	DelaySeconds           int                 `json:"DelaySeconds"`
	MessageAttributes      map[string]attrJSON `json:"MessageAttributes"`
	MessageGroupID         string              `json:"MessageGroupId"`
	MessageDeduplicationID string              `json:"MessageDeduplicationId"`
	MaxNumberOfMessages    int                 `json:"MaxNumberOfMessages"`
	VisibilityTimeout      *int                `json:"VisibilityTimeout"`
	WaitTimeSeconds        int                 `json:"WaitTimeSeconds"`
	ReceiptHandle          string              `json:"ReceiptHandle"`
	AttributeNames         []string            `json:"AttributeNames"`
	SourceArn              string              `json:"SourceArn"`
	DestinationArn         string              `json:"DestinationArn"`
	MaxPerSecond           int                 `json:"MaxNumberOfMessagesPerSecond"`
	MaxResults             int                 `json:"MaxResults"`
	TaskHandle             string              `json:"TaskHandle"`
	Entries                []entryJSON         `json:"Entries"`
}

// entryJSON is one entry of a batch request.
type entryJSON struct {
	ID                     string              `json:"Id"`
	MessageBody            string              `json:"MessageBody"`
	DelaySeconds           int                 `json:"DelaySeconds"`
	MessageAttributes      map[string]attrJSON `json:"MessageAttributes"`
	MessageGroupID         string              `json:"MessageGroupId"`
	MessageDeduplicationID string              `json:"MessageDeduplicationId"`
	ReceiptHandle          string              `json:"ReceiptHandle"`
	VisibilityTimeout      int                 `json:"VisibilityTimeout"`
}

// batcher is the batch side of *sqsfake.Fake.
type batcher interface {
	SendMessageBatch(ctx context.Context, queueURL string, entries []sqsfake.SendBatchEntry) ([]sqsfake.SendBatchResult, []sqsfake.BatchEntryError, error)
	DeleteMessageBatch(ctx context.Context, queueURL string, entries []sqsfake.ReceiptBatchEntry) ([]string, []sqsfake.BatchEntryError, error)
	ChangeMessageVisibilityBatch(ctx context.Context, queueURL string, entries []sqsfake.ReceiptBatchEntry) ([]string, []sqsfake.BatchEntryError, error)
}

func attributesIn(in map[string]attrJSON) map[string]queue.Attribute {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]queue.Attribute, len(in))
	for k, a := range in {
		out[k] = queue.Attribute{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	return out
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	if r.Method != http.MethodPost || !ok {
		writeError(w, http.StatusBadRequest, "InvalidAction", "", "want POST with X-Amz-Target: AmazonSQS.<Operation>")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameterValue", "", err.Error())
		return
	}
	var req request
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			writeError(w, http.StatusBadRequest, "SerializationException", "", err.Error())
			return
		}
	}
	out, err := h.do(r.Context(), op, &req)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
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

func (h *handler) do(ctx context.Context, op string, req *request) (any, error) {
	switch op {
	case "SendMessage":
		in := &queue.SendMessageInput{
			QueueURL: req.QueueURL, Body: req.MessageBody, MessageGroupID: req.MessageGroupID,
			MessageDeduplicationID: req.MessageDeduplicationID, Delay: time.Duration(req.DelaySeconds) * time.Second,
			MessageAttributes: attributesIn(req.MessageAttributes),
		}
		out, err := h.api.SendMessage(ctx, in)
		if err != nil {
			return nil, err
		}
		res := map[string]any{"MessageId": out.MessageID, "MD5OfMessageBody": md5Hex(req.MessageBody)}
		if d := md5OfAttributes(in.MessageAttributes); d != "" {
			res["MD5OfMessageAttributes"] = d
		}
		if out.SequenceNumber != "" {
			res["SequenceNumber"] = out.SequenceNumber
		}
		return res, nil
	case "SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch":
		b, ok := h.api.(batcher)
		if !ok {
			break
		}
		return doBatch(ctx, b, op, req)
	case "ReceiveMessage":
		in := &queue.ReceiveMessageInput{QueueURL: req.QueueURL, MaxMessages: req.MaxNumberOfMessages, WaitTime: time.Duration(req.WaitTimeSeconds) * time.Second}
		if req.VisibilityTimeout != nil && *req.VisibilityTimeout > 0 {
			// The SDK cannot distinguish an unset VisibilityTimeout from 0,
			// so 0 means the queue's default here.
			in.VisibilityTimeout = time.Duration(*req.VisibilityTimeout) * time.Second
		}
		msgs, err := h.api.ReceiveMessage(ctx, in)
		if err != nil {
			return nil, err
		}
		out := make([]map[string]any, 0, len(msgs))
		for _, m := range msgs {
			jm := map[string]any{"MessageId": m.MessageID, "ReceiptHandle": m.ReceiptHandle, "Body": m.Body, "MD5OfBody": m.MD5OfBody, "Attributes": m.Attributes}
			if len(m.MessageAttributes) > 0 {
				ma := map[string]attrJSON{}
				for k, a := range m.MessageAttributes {
					ma[k] = attrJSON{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
				}
				jm["MessageAttributes"] = ma
				jm["MD5OfMessageAttributes"] = md5OfAttributes(m.MessageAttributes)
			}
			out = append(out, jm)
		}
		return map[string]any{"Messages": out}, nil
	case "DeleteMessage":
		return struct{}{}, h.api.DeleteMessage(ctx, req.QueueURL, req.ReceiptHandle)
	case "ChangeMessageVisibility":
		vt := 0
		if req.VisibilityTimeout != nil {
			vt = *req.VisibilityTimeout
		}
		return struct{}{}, h.api.ChangeMessageVisibility(ctx, req.QueueURL, req.ReceiptHandle, time.Duration(vt)*time.Second)
	case "GetQueueAttributes":
		attrs, err := h.api.GetQueueAttributes(ctx, req.QueueURL, req.AttributeNames...)
		return map[string]any{"Attributes": attrs}, err
	case "GetQueueUrl":
		url, err := h.api.GetQueueURL(ctx, req.QueueName)
		return map[string]any{"QueueUrl": url}, err
	case "ListDeadLetterSourceQueues":
		urls, err := h.api.ListDeadLetterSourceQueues(ctx, req.QueueURL)
		return map[string]any{"queueUrls": urls}, err
	case "StartMessageMoveTask":
		handle, err := h.api.StartMessageMoveTask(ctx, &queue.StartMoveTaskInput{SourceARN: req.SourceArn, DestinationARN: req.DestinationArn, MaxPerSecond: req.MaxPerSecond})
		return map[string]any{"TaskHandle": handle}, err
	case "ListMessageMoveTasks":
		tasks, err := h.api.ListMessageMoveTasks(ctx, req.SourceArn, req.MaxResults)
		if err != nil {
			return nil, err
		}
		res := make([]map[string]any, 0, len(tasks))
		for _, t := range tasks {
			e := map[string]any{
				"Status": t.Status, "SourceArn": t.SourceARN, "ApproximateNumberOfMessagesMoved": t.Moved,
				"StartedTimestamp": t.Started.UnixMilli(),
			}
			for k, v := range map[string]string{"TaskHandle": t.TaskHandle, "DestinationArn": t.DestinationARN, "FailureReason": t.FailureReason} {
				if v != "" {
					e[k] = v
				}
			}
			if t.MaxPerSecond > 0 {
				e["MaxNumberOfMessagesPerSecond"] = t.MaxPerSecond
			}
			if t.ToMove >= 0 {
				e["ApproximateNumberOfMessagesToMove"] = t.ToMove
			}
			res = append(res, e)
		}
		return map[string]any{"Results": res}, nil
	case "CancelMessageMoveTask":
		moved, err := h.api.CancelMessageMoveTask(ctx, req.TaskHandle)
		return map[string]any{"ApproximateNumberOfMessagesMoved": moved}, err
	}
	return nil, fmt.Errorf("%w: operation %s is not served", errUnsupported, op)
}

var errUnsupported = errors.New("unsupported operation")

// writeAPIError maps the queue sentinels to SQS's error codes.
func writeAPIError(w http.ResponseWriter, err error) {
	type mapping struct {
		sentinel    error
		status      int
		typ, qcode  string
		fixedDetail string
	}
	for _, m := range []mapping{
		{queue.ErrQueueNotFound, 400, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist."},
		{queue.ErrReceiptHandleInvalid, 400, "ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", ""},
		{queue.ErrMessageNotInflight, 400, "MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight", ""},
		{queue.ErrMoveTaskRunning, 400, "InvalidParameterValue", "InvalidParameterValue", "There is already a task running. Only one active task is allowed for a source queue arn at a given time."},
		{queue.ErrNotDeadLetterQueue, 400, "InvalidParameterValue", "InvalidParameterValue", "Source queue must be configured as a Dead Letter Queue."},
		{queue.ErrTaskNotFound, 400, "ResourceNotFoundException", "ResourceNotFoundException", ""},
		{sqsfake.ErrEmptyBatch, 400, "EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest", ""},
		{sqsfake.ErrTooManyEntries, 400, "TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", ""},
		{sqsfake.ErrInvalidBatchEntryID, 400, "InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId", ""},
		{sqsfake.ErrBatchEntryIDsNotDistinct, 400, "BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", ""},
		{sqsfake.ErrBatchRequestTooLong, 400, "BatchRequestTooLong", "AWS.SimpleQueueService.BatchRequestTooLong", ""},
		{sqsfake.ErrInvalidMessageContents, 400, "InvalidMessageContents", "InvalidMessageContents", ""},
		{sqsfake.ErrMissingParameter, 400, "MissingParameter", "MissingParameter", ""},
		{queue.ErrInvalidParameter, 400, "InvalidParameterValue", "InvalidParameterValue", ""},
		{ErrAccessDenied, 403, "AccessDenied", "AccessDenied", ""},
		{errUnsupported, 400, "UnsupportedOperation", "AWS.SimpleQueueService.UnsupportedOperation", ""},
	} {
		if errors.Is(err, m.sentinel) {
			writeError(w, m.status, m.typ, m.qcode, cmp.Or(m.fixedDetail, err.Error()))
			return
		}
	}
	writeError(w, http.StatusInternalServerError, "InternalError", "", err.Error())
}

func writeError(w http.ResponseWriter, status int, typ, queryCode, msg string) {
	w.Header().Set("X-Amzn-ErrorType", typ)
	if queryCode != "" {
		fault := "Sender"
		if status >= 500 {
			fault = "Receiver"
		}
		w.Header().Set("X-Amzn-Query-Error", queryCode+";"+fault)
	}
	writeJSON(w, status, map[string]string{"__type": typ, "message": msg})
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
