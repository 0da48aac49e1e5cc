package sqsfake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mercadofresco/integration/lambdas/queue"
)

// SQS's batch limits: at most MaxBatchEntries entries, and at most
// MaxBatchPayload bytes for the bodies and attributes of all entries
// together (the service's limit, whatever the queue's MaximumMessageSize;
// each entry is also held to the queue's own limit).
const (
	MaxBatchEntries = 10
	MaxBatchPayload = 1 << 20
)

// Errors of a whole request (nothing is done); each wraps
// queue.ErrInvalidParameter. ErrInvalidMessageContents and
// ErrMissingParameter classify a refused message (SendMessage, or one entry
// of a batch).
var (
	ErrEmptyBatch               = fmt.Errorf("%w: the batch has no entries", queue.ErrInvalidParameter)
	ErrTooManyEntries           = fmt.Errorf("%w: a batch has at most %d entries", queue.ErrInvalidParameter, MaxBatchEntries)
	ErrInvalidBatchEntryID      = fmt.Errorf("%w: a batch entry id is 1..80 letters, digits, '-' or '_'", queue.ErrInvalidParameter)
	ErrBatchEntryIDsNotDistinct = fmt.Errorf("%w: two batch entries have the same id", queue.ErrInvalidParameter)
	ErrBatchRequestTooLong      = fmt.Errorf("%w: the batch's messages together exceed %d bytes", queue.ErrInvalidParameter, MaxBatchPayload)
	ErrInvalidMessageContents   = fmt.Errorf("%w: the message contains characters outside the allowed set", queue.ErrInvalidParameter)
	ErrMissingParameter         = fmt.Errorf("%w: a required parameter is missing", queue.ErrInvalidParameter)
)

// SendBatchEntry is one message of SendMessageBatch; Message.QueueURL is
// not read.
type SendBatchEntry struct {
	ID      string
	Message queue.SendMessageInput
}

// SendBatchResult is one accepted message.
type SendBatchResult struct {
	ID             string
	MessageID      string
	SequenceNumber string
}

// ReceiptBatchEntry is one entry of DeleteMessageBatch or
// ChangeMessageVisibilityBatch (Timeout is read by the latter only).
type ReceiptBatchEntry struct {
	ID            string
	ReceiptHandle string
	Timeout       time.Duration
}

// BatchEntryError is one refused entry: Code is SQS's error code for it.
type BatchEntryError struct {
	ID          string
	Code        string
	Message     string
	SenderFault bool
}

// SendMessageBatch sends up to ten messages. As in SQS, a malformed
// request (no entries, more than ten, a bad or repeated id, a payload over
// MaxBatchPayload) fails whole; otherwise each entry succeeds or fails on
// its own, with the answer SendMessage would give it.
func (f *Fake) SendMessageBatch(ctx context.Context, queueURL string, entries []SendBatchEntry) ([]SendBatchResult, []BatchEntryError, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, "SendMessageBatch", queueURL)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(entries))
	payload := 0
	for i, e := range entries {
		ids[i] = e.ID
		payload += len(e.Message.Body) + attributesSize(e.Message.MessageAttributes)
	}
	if err := validateBatch("SendMessageBatch", ids); err != nil {
		return nil, nil, err
	}
	if payload > MaxBatchPayload {
		return nil, nil, fmt.Errorf("sqsfake: SendMessageBatch: %w (%d bytes)", ErrBatchRequestTooLong, payload)
	}
	var ok []SendBatchResult
	var failed []BatchEntryError
	for _, e := range entries {
		in := e.Message
		out, err := f.send(q, &in)
		if err != nil {
			failed = append(failed, entryError(e.ID, err))
			continue
		}
		ok = append(ok, SendBatchResult{ID: e.ID, MessageID: out.MessageID, SequenceNumber: out.SequenceNumber})
	}
	return ok, failed, nil
}

// DeleteMessageBatch deletes up to ten messages; each entry is answered as
// DeleteMessage would answer it. It returns the ids of the deleted entries.
func (f *Fake) DeleteMessageBatch(ctx context.Context, queueURL string, entries []ReceiptBatchEntry) ([]string, []BatchEntryError, error) {
	return f.receiptBatch(ctx, "DeleteMessageBatch", queueURL, entries, func(q *fakeQueue, e ReceiptBatchEntry) error {
		return f.delete(q, e.ReceiptHandle)
	})
}

// ChangeMessageVisibilityBatch changes the visibility of up to ten
// messages; each entry is answered as ChangeMessageVisibility would answer
// it. It returns the ids of the changed entries.
func (f *Fake) ChangeMessageVisibilityBatch(ctx context.Context, queueURL string, entries []ReceiptBatchEntry) ([]string, []BatchEntryError, error) {
	return f.receiptBatch(ctx, "ChangeMessageVisibilityBatch", queueURL, entries, func(q *fakeQueue, e ReceiptBatchEntry) error {
		return f.changeVisibility(q, e.ReceiptHandle, e.Timeout)
	})
}

func (f *Fake) receiptBatch(ctx context.Context, op, queueURL string, entries []ReceiptBatchEntry, do func(*fakeQueue, ReceiptBatchEntry) error) ([]string, []BatchEntryError, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.lookup(ctx, op, queueURL)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	if err := validateBatch(op, ids); err != nil {
		return nil, nil, err
	}
	var ok []string
	var failed []BatchEntryError
	for _, e := range entries {
		if err := do(q, e); err != nil {
			failed = append(failed, entryError(e.ID, err))
			continue
		}
		ok = append(ok, e.ID)
	}
	return ok, failed, nil
}

// validateBatch applies the rules on a batch's entry ids.
func validateBatch(op string, ids []string) error {
	switch {
	case len(ids) == 0:
		return fmt.Errorf("sqsfake: %s: %w", op, ErrEmptyBatch)
	case len(ids) > MaxBatchEntries:
		return fmt.Errorf("sqsfake: %s: %w (%d)", op, ErrTooManyEntries, len(ids))
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !validEntryID(id) {
			return fmt.Errorf("sqsfake: %s: %w: %q", op, ErrInvalidBatchEntryID, id)
		}
		if seen[id] {
			return fmt.Errorf("sqsfake: %s: %w: %q", op, ErrBatchEntryIDsNotDistinct, id)
		}
		seen[id] = true
	}
	return nil
}

func validEntryID(id string) bool {
	if id == "" || len(id) > 80 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// entryError is err as a failed batch entry, with SQS's code.
func entryError(id string, err error) BatchEntryError {
	code := "InternalError"
	switch {
	case errors.Is(err, ErrInvalidMessageContents):
		code = "InvalidMessageContents"
	case errors.Is(err, ErrMissingParameter):
		code = "MissingParameter"
	case errors.Is(err, queue.ErrReceiptHandleInvalid):
		code = "ReceiptHandleIsInvalid"
	case errors.Is(err, queue.ErrMessageNotInflight):
		code = "MessageNotInflight"
	case errors.Is(err, queue.ErrInvalidParameter):
		code = "InvalidParameterValue"
	}
	return BatchEntryError{ID: id, Code: code, Message: err.Error(), SenderFault: code != "InternalError"}
}

// attributesSize is what attrs add to a message's size (name, type and
// value of each), without validating them.
func attributesSize(attrs map[string]queue.Attribute) int {
	n := 0
	for name, a := range attrs {
		n += len(name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}
