package sqsbatch

import (
	"cmp"
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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/retry"
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
	// that did not fit: SQS allows 10 attributes per message and the
	// consumer's own come first.
	AttrOriginalAttributes = "mf-original-attributes"
	// AttrUnreadableOriginals keeps, verbatim, an incoming
	// AttrOriginalAttributes value that is not the JSON this library writes.
	AttrUnreadableOriginals = "mf-unreadable-original-attributes"

	// AttrPrefix starts the name of every attribute a consumer sets itself
	// (these, sqsconsumer.Plan's deferral counter). An incoming attribute
	// with this prefix is ignored: only the consumer that sends a message
	// on (to its DLQ, or a delayed copy to its own queue) may set one.
	AttrPrefix = "mf-"

	// AttrBodyTruncated marks a reason record (see deadLetter): its body is
	// the start of the original's, which reaches the DLQ intact through the
	// queue's redrive policy (String: "true").
	AttrBodyTruncated = "mf-body-truncated"

	// maxAttributes is SQS's limit of message attributes per message.
	maxAttributes  = 10
	maxReasonBytes = 1024
	// MaxMessageBytes is the size a DLQ record must fit in: body plus every
	// attribute's name, data type and value (SQS's classic 256 KiB limit,
	// also Lambda's event source limit).
	MaxMessageBytes = 256 * 1024
	// minReasonBytes is the shortest reason worth sending beside the
	// original body and attributes.
	minReasonBytes = 64
)

// ErrRecordTooLarge says a DLQ record with the original body and
// attributes and the failure attributes cannot fit in MaxMessageBytes.
var ErrRecordTooLarge = errors.New("sqsbatch: the DLQ record does not fit in 256 KiB")

// messageBytes is what SQS counts against the size limit.
func messageBytes(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for k, a := range attrs {
		n += len(k) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + len(a.BinaryValue)
	}
	return n
}

// deadLetter sends rec to the DLQ with the failure described in attributes.
// Sending happens before the record is acknowledged (it is acknowledged by
// not listing it in batchItemFailures), so a failed send loses nothing.
// The record must fit in MaxMessageBytes: the reason is shortened first;
// when even that cannot make room, or the send fails, a reason record
// (sendReason) goes to the DLQ and the original is left to the queue's
// redrive, which moves it intact, so the runbook finds both the message and
// why (matched by mf-original-message-id).
// It returns the DLQ's message id (a new one: the original travels in
// AttrOriginalMessageID).
func (p *Processor) deadLetter(ctx context.Context, rec *Record, class failure.Kind, cause error) (string, error) {
	dlqURL, ok := p.cfg.DLQRoutes.For(rec.Message.EventSourceARN)
	if p.cfg.DLQ == nil || !ok {
		return "", fmt.Errorf("no DLQ configured for source %s (the queue's redrive policy will move it after maxReceiveCount)", rec.Message.EventSourceARN)
	}
	in := &sqs.SendMessageInput{
		QueueUrl:          aws.String(dlqURL),
		MessageBody:       aws.String(rec.Message.Body),
		MessageAttributes: dlqAttributes(rec, class, cause, p.cfg.ConsumerVersion),
	}
	if over := messageBytes(rec.Message.Body, in.MessageAttributes) - MaxMessageBytes; over > 0 {
		// Shorten the reason to make room; the body and the original
		// attributes are never cut in a record that replaces the original.
		reason := aws.ToString(in.MessageAttributes[AttrFailureReason].StringValue)
		if room := len(reason) - over; room >= minReasonBytes {
			in.MessageAttributes[AttrFailureReason] = StringAttribute(truncate(reason, room))
		} else {
			// No room: the original stays in the source queue (the error
			// reports the record as failed) and its redrive moves it
			// intact; the DLQ gets its reason beside it now.
			err := fmt.Errorf("%w (%d bytes over)", ErrRecordTooLarge, over)
			if _, rerr := p.sendReason(ctx, dlqURL, rec, class, cause); rerr != nil {
				return "", errors.Join(err, fmt.Errorf("and the reason record failed: %w", rerr))
			}
			return "", fmt.Errorf("%w; a reason record was sent, the original reaches the DLQ by the queue's redrive", err)
		}
	}
	p.fifoFields(in, dlqURL, rec, "")
	out, err := p.cfg.DLQ.SendMessage(ctx, in)
	if err != nil {
		// Try the smallest record that still says why (the DLQ may refuse
		// this one only); the original stays for the redrive either way.
		if _, rerr := p.sendReason(ctx, dlqURL, rec, class, cause); rerr == nil {
			return "", fmt.Errorf("%w; a reason record was sent, the original reaches the DLQ by the queue's redrive", err)
		}
		return "", err
	}
	return aws.ToString(out.MessageId), nil
}

// sendReason sends a reason record: the failure attributes, the start of
// the body (AttrBodyTruncated) and none of the original attributes, sized
// to fit. It never replaces the original, which the caller leaves to the
// queue's redrive.
func (p *Processor) sendReason(ctx context.Context, dlqURL string, rec *Record, class failure.Kind, cause error) (string, error) {
	attrs := failureAttributes(rec, class, cause, truncate(cmp.Or(p.cfg.ConsumerVersion, "unknown"), 256))
	attrs[AttrBodyTruncated] = StringAttribute("true")
	room := MaxMessageBytes - messageBytes("", attrs)
	in := &sqs.SendMessageInput{QueueUrl: aws.String(dlqURL), MessageBody: aws.String(truncate(rec.Message.Body, room)), MessageAttributes: attrs}
	p.fifoFields(in, dlqURL, rec, "\x00reason")
	out, err := p.cfg.DLQ.SendMessage(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.MessageId), nil
}

// fifoFields sets the group and deduplication id of a send to a FIFO DLQ
// (salt tells a reason record's from the full record's).
func (p *Processor) fifoFields(in *sqs.SendMessageInput, dlqURL string, rec *Record, salt string) {
	if !strings.HasSuffix(dlqURL, ".fifo") {
		return
	}
	in.MessageGroupId = aws.String(cmp.Or(rec.GroupID, rec.Message.MessageId))
	// Unique per receive, stable across the SDK's own retries of this send:
	// a retried send is deduplicated, a later failure of the same message
	// (after a redrive) is not mistaken for a duplicate and dropped.
	sum := sha256.Sum256([]byte(rec.Message.MessageId + "\x00" + rec.Message.ReceiptHandle + salt))
	in.MessageDeduplicationId = aws.String(hex.EncodeToString(sum[:]))
}

// dlqAttributes are the DLQ record's attributes: the failure attributes
// of this consumer, then the incoming ones it carries forward
// (ForwardAttributes).
func dlqAttributes(rec *Record, class failure.Kind, cause error, version string) map[string]types.MessageAttributeValue {
	return ForwardAttributes(rec, failureAttributes(rec, class, cause, version))
}

// failureAttributes say why rec failed, and in which consumer version.
func failureAttributes(rec *Record, class failure.Kind, cause error, version string) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		AttrFailureReason:     StringAttribute(truncate(cause.Error(), maxReasonBytes)),
		AttrFailureClass:      StringAttribute(class.String()),
		AttrConsumerVersion:   StringAttribute(version),
		AttrOriginalMessageID: StringAttribute(nonEmpty(rec.Message.MessageId)),
		AttrReceiveCount:      NumberAttribute(int64(rec.ReceiveCount)),
	}
}

// ForwardAttributes returns the attributes of a message a consumer sends on
// behalf of rec: to its DLQ (the library's dead-lettering) or back to its own
// queue (sqsconsumer.Plan's delayed copy). own are the consumer's own
// attributes (mf-* names, at most 9), and they always win. Every other
// attribute is rec's, without any whose name starts with AttrPrefix: an
// incoming mf-* attribute is ignored, whoever set it (a producer cannot
// forge a failure reason, a consumer version or a deferral count into the
// DLQ record). Originals packed in an incoming AttrOriginalAttributes (a
// message dead-lettered before and redriven as it was) are unpacked the
// same way (OriginalAttributes), so they survive any number of round trips
// while an mf-* name packed inside never comes back. What does not fit in
// SQS's 10 attributes (in name order) is packed into AttrOriginalAttributes;
// an incoming packed value that is not ours to read is kept verbatim as
// AttrUnreadableOriginals.
func ForwardAttributes(rec *Record, own map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	incoming := make(map[string]types.MessageAttributeValue, len(rec.Message.MessageAttributes))
	for n, a := range rec.Message.MessageAttributes {
		incoming[n] = types.MessageAttributeValue{DataType: aws.String(a.DataType), StringValue: a.StringValue, BinaryValue: slices.Clone(a.BinaryValue)}
	}
	out := make(map[string]types.MessageAttributeValue, maxAttributes)
	maps.Copy(out, own)
	originals, err := OriginalAttributes(incoming)
	if err != nil {
		originals, _ = OriginalAttributes(withoutAttr(incoming, AttrOriginalAttributes))
		out[AttrUnreadableOriginals] = incoming[AttrOriginalAttributes]
	}
	names := slices.Sorted(maps.Keys(originals))
	room := maxAttributes - len(out)
	if len(names) > room {
		room-- // one slot for the packed attribute
	}
	overflow := map[string]overflowAttr{}
	for i, n := range names {
		a := originals[n]
		if i < room {
			out[n] = a
			continue
		}
		overflow[n] = overflowAttr{DataType: aws.ToString(a.DataType), StringValue: aws.ToString(a.StringValue), BinaryValue: a.BinaryValue}
	}
	if len(overflow) > 0 {
		b, _ := json.Marshal(overflow) // marshalling strings and []byte cannot fail
		out[AttrOriginalAttributes] = StringAttribute(string(b))
	}
	return out
}

func withoutAttr(attrs map[string]types.MessageAttributeValue, name string) map[string]types.MessageAttributeValue {
	out := maps.Clone(attrs)
	delete(out, name)
	return out
}

type overflowAttr struct {
	DataType    string `json:"DataType"`
	StringValue string `json:"StringValue,omitempty"`
	BinaryValue []byte `json:"BinaryValue,omitempty"`
}

func (a overflowAttr) value() types.MessageAttributeValue {
	v := types.MessageAttributeValue{DataType: aws.String(a.DataType), BinaryValue: a.BinaryValue}
	if !strings.HasPrefix(a.DataType, "Binary") {
		v.StringValue = aws.String(a.StringValue)
	}
	return v
}

// StringAttribute returns a String message attribute holding v.
func StringAttribute(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

// NumberAttribute returns a Number message attribute holding n.
func NumberAttribute(n int64) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.FormatInt(n, 10))}
}

// Sender sends one message (*sqs.Client has it): dead-lettering and the
// delayed copies of sqsconsumer.Plan.
type Sender interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// VisibilityChanger changes the visibility timeout of a received message
// (*sqs.Client has it).
type VisibilityChanger interface {
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// QueueURL returns the URL of the SQS queue whose ARN is queueARN (a
// record's EventSourceARN), as SQS forms it.
func QueueURL(queueARN string) (string, error) {
	a, err := arn.Parse(queueARN)
	if err != nil || a.Service != "sqs" || a.Region == "" || a.AccountID == "" || a.Resource == "" || strings.Contains(a.Resource, ":") {
		return "", fmt.Errorf("sqsbatch: %q is not an SQS queue ARN", queueARN)
	}
	domain := "amazonaws.com"
	if a.Partition == "aws-cn" {
		domain = "amazonaws.com.cn"
	}
	return "https://sqs." + a.Region + "." + domain + "/" + a.AccountID + "/" + a.Resource, nil
}

// truncate makes s a valid, non-empty SQS attribute value of at most n
// bytes: characters SQS refuses become U+FFFD (see retry.Truncate for the
// rest).
func truncate(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000 {
			return r
		}
		return utf8.RuneError
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
	return nonEmpty(retry.Truncate(s, n))
}

func nonEmpty(s string) string { return cmp.Or(s, "-") }

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
func ParseDeadLetter(attrs map[string]types.MessageAttributeValue) (d DeadLetter, ok bool) {
	reason, ok := attrs[AttrFailureReason]
	if !ok {
		return DeadLetter{}, false
	}
	n, _ := strconv.Atoi(aws.ToString(attrs[AttrReceiveCount].StringValue))
	return DeadLetter{
		Reason:            aws.ToString(reason.StringValue),
		Class:             aws.ToString(attrs[AttrFailureClass].StringValue),
		ConsumerVersion:   aws.ToString(attrs[AttrConsumerVersion].StringValue),
		OriginalMessageID: aws.ToString(attrs[AttrOriginalMessageID].StringValue),
		ReceiveCount:      n,
	}, true
}

// OriginalAttributes returns the message attributes a message had before a
// consumer sent it on (what a redrive sends back, and what a consumer carries
// forward): every attribute whose name does not start with AttrPrefix, and
// those packed into AttrOriginalAttributes, again without mf-* names. No mf-*
// attribute is ever original: consumers set them when they send, and ignore
// them when they receive. It is the one place that unpacks
// AttrOriginalAttributes.
func OriginalAttributes(attrs map[string]types.MessageAttributeValue) (map[string]types.MessageAttributeValue, error) {
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for k, v := range attrs {
		if !IsConsumerAttribute(k) {
			out[k] = v
		}
	}
	if packed, ok := attrs[AttrOriginalAttributes]; ok {
		var overflow map[string]overflowAttr
		if err := json.Unmarshal([]byte(aws.ToString(packed.StringValue)), &overflow); err != nil {
			return nil, fmt.Errorf("sqsbatch: attribute %s: %w", AttrOriginalAttributes, err)
		}
		for k, v := range overflow {
			if !IsConsumerAttribute(k) {
				out[k] = v.value()
			}
		}
	}
	return out, nil
}

// IsConsumerAttribute reports whether name is reserved for the attributes
// consumers set themselves (it starts with AttrPrefix).
func IsConsumerAttribute(name string) bool { return strings.HasPrefix(name, AttrPrefix) }
