package sqsbatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mercadofresco/integration/lambdas/internal/text"
	"github.com/mercadofresco/integration/lambdas/queue"
)

// Message attributes added to dead-lettered messages. The DLQ runbook's
// classification step reads them (same reason? same consumer version? one
// receive or maxReceiveCount?).
const (
	AttrFailureReason     = "mf-failure-reason"      // String: the error text
	AttrFailureClass      = "mf-failure-class"       // String: poison | permanent
	AttrConsumerVersion   = "mf-consumer-version"    // String: Config.ConsumerVersion
	AttrOriginalMessageID = "mf-original-message-id" // String: the source message id
	AttrReceiveCount      = "mf-receive-count"       // Number: ApproximateReceiveCount at failure
	// AttrOriginalAttributes holds, as JSON, the original message attributes
	// that did not fit: SQS allows 10 attributes per message and the five
	// above come first.
	AttrOriginalAttributes = "mf-original-attributes"

	maxReasonBytes = 1024
)

var ourAttributes = []string{AttrFailureReason, AttrFailureClass, AttrConsumerVersion, AttrOriginalMessageID, AttrReceiveCount, AttrOriginalAttributes}

// deadLetter sends rec to the DLQ with the failure described in attributes.
// Sending happens before the record is acknowledged (it is acknowledged by
// not listing it in batchItemFailures), so a failed send loses nothing.
// It returns the DLQ's message id (a new one: the original travels in
// AttrOriginalMessageID).
func (p *Processor) deadLetter(ctx context.Context, rec *Record, class Class, cause error) (string, error) {
	dlqURL := p.cfg.DLQURL
	if len(p.cfg.DLQRoutes) > 0 {
		var ok bool
		if dlqURL, ok = p.cfg.DLQRoutes.For(rec.Message.EventSourceARN); !ok {
			return "", fmt.Errorf("no DLQ route for source %s (the queue's redrive policy will move it after maxReceiveCount)", rec.Message.EventSourceARN)
		}
	}
	if p.cfg.DLQ == nil || dlqURL == "" {
		return "", errors.New("no DLQ configured (the queue's redrive policy will move it after maxReceiveCount)")
	}
	in := &queue.SendMessageInput{
		QueueURL:          dlqURL,
		Body:              rec.Message.Body,
		MessageAttributes: dlqAttributes(rec, class, cause, p.cfg.ConsumerVersion),
	}
	if strings.HasSuffix(dlqURL, ".fifo") {
		in.MessageGroupID = rec.GroupID
		if in.MessageGroupID == "" {
			in.MessageGroupID = rec.Message.MessageId
		}
		// Unique per receive, stable across the SDK's own retries of this send:
		// a retried send is deduplicated, a later failure of the same message
		// (after a redrive) is not mistaken for a duplicate and dropped.
		sum := sha256.Sum256([]byte(rec.Message.MessageId + "\x00" + rec.Message.ReceiptHandle))
		in.MessageDeduplicationID = hex.EncodeToString(sum[:])
	}
	out, err := p.cfg.DLQ.SendMessage(ctx, in)
	if err != nil {
		return "", err
	}
	return out.MessageID, nil
}

// dlqAttributes keeps the original attributes and adds the failure ones. When
// the total would exceed SQS's 10, the originals that do not fit (in name
// order) are packed into one JSON attribute so nothing is lost. A message
// dead-lettered before (and redriven as it was, by SQS's own move task) gets
// its previous failure attributes replaced and its packed originals unpacked
// and packed again, so they survive any number of round trips.
func dlqAttributes(rec *Record, class Class, cause error, version string) map[string]queue.Attribute {
	ours := map[string]queue.Attribute{
		AttrFailureReason:     queue.StringAttribute(truncate(cause.Error(), maxReasonBytes)),
		AttrFailureClass:      queue.StringAttribute(class.String()),
		AttrConsumerVersion:   queue.StringAttribute(version),
		AttrOriginalMessageID: queue.StringAttribute(nonEmpty(rec.Message.MessageId)),
		AttrReceiveCount:      queue.NumberAttribute(int64(rec.ReceiveCount)),
	}
	incoming := make(map[string]queue.Attribute, len(rec.Message.MessageAttributes))
	for n, a := range rec.Message.MessageAttributes {
		incoming[n] = queue.AttributeFromEvent(a)
	}
	originals, err := OriginalAttributes(incoming)
	if err != nil {
		// A packed value that is not ours to read: keep it verbatim under
		// its own name rather than drop it.
		originals, _ = OriginalAttributes(withoutAttr(incoming, AttrOriginalAttributes))
		originals["mf-unreadable-original-attributes"] = incoming[AttrOriginalAttributes]
	}
	names := slices.Sorted(maps.Keys(originals))
	out := make(map[string]queue.Attribute, 10)
	for k, v := range ours {
		out[k] = v
	}
	room := 10 - len(ours)
	if len(names) > room {
		room-- // one slot for the overflow attribute
	}
	overflow := map[string]overflowAttr{}
	for i, n := range names {
		a := originals[n]
		if i < room {
			out[n] = a
			continue
		}
		overflow[n] = overflowAttr{DataType: a.DataType, StringValue: a.StringValue, BinaryValue: a.BinaryValue}
	}
	if len(overflow) > 0 {
		b, _ := json.Marshal(overflow) // marshalling strings and []byte cannot fail
		out[AttrOriginalAttributes] = queue.StringAttribute(string(b))
	}
	return out
}

func withoutAttr(attrs map[string]queue.Attribute, name string) map[string]queue.Attribute {
	out := maps.Clone(attrs)
	delete(out, name)
	return out
}

type overflowAttr struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue,omitempty"`
	BinaryValue []byte `json:"BinaryValue,omitempty"`
}

// truncate makes s a valid, non-empty SQS attribute value of at most n
// bytes: characters SQS refuses become U+FFFD (see text.Truncate for the
// rest).
func truncate(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000 {
			return r
		}
		return utf8.RuneError
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
	return nonEmpty(text.Truncate(s, n))
}

func nonEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// DeadLetter is what the library recorded on a message it dead-lettered.
// Operator tools (the DLQ runbook's classify step) read it back with
// ParseDeadLetter; messages moved by the queue's redrive policy instead carry
// none of it (their DeadLetterQueueSourceArn system attribute says so).
type DeadLetter struct {
	Reason            string
	Class             string // "poison" or "permanent"
	ConsumerVersion   string
	OriginalMessageID string
	ReceiveCount      int
}

// ParseDeadLetter extracts the failure attributes from a DLQ message's
// attributes. ok is false when the message was not dead-lettered by this
// library.
func ParseDeadLetter(attrs map[string]queue.Attribute) (d DeadLetter, ok bool) {
	reason, ok := attrs[AttrFailureReason]
	if !ok {
		return DeadLetter{}, false
	}
	n, _ := strconv.Atoi(attrs[AttrReceiveCount].StringValue)
	return DeadLetter{
		Reason:            reason.StringValue,
		Class:             attrs[AttrFailureClass].StringValue,
		ConsumerVersion:   attrs[AttrConsumerVersion].StringValue,
		OriginalMessageID: attrs[AttrOriginalMessageID].StringValue,
		ReceiveCount:      n,
	}, true
}

// OriginalAttributes returns the message attributes the message had before
// it was dead-lettered: the library's failure attributes are removed and the
// ones packed into AttrOriginalAttributes are restored. A redrive tool sends
// the body back with these.
func OriginalAttributes(attrs map[string]queue.Attribute) (map[string]queue.Attribute, error) {
	out := make(map[string]queue.Attribute, len(attrs))
	for k, v := range attrs {
		if !slices.Contains(ourAttributes, k) {
			out[k] = v
		}
	}
	if packed, ok := attrs[AttrOriginalAttributes]; ok {
		var overflow map[string]overflowAttr
		if err := json.Unmarshal([]byte(packed.StringValue), &overflow); err != nil {
			return nil, fmt.Errorf("sqsbatch: attribute %s: %w", AttrOriginalAttributes, err)
		}
		for k, v := range overflow {
			out[k] = queue.Attribute{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		}
	}
	return out, nil
}
