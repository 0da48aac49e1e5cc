package sqsserver

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mercadofresco/integration/internal/sqsfake"
	"github.com/mercadofresco/integration/lambdas/queue"
)

// doBatch serves the three batch operations.
func doBatch(ctx context.Context, b batcher, op string, req *request) (any, error) {
	failedJSON := func(failed []sqsfake.BatchEntryError) []map[string]any {
		out := make([]map[string]any, 0, len(failed))
		for _, e := range failed {
			out = append(out, map[string]any{"Id": e.ID, "Code": e.Code, "Message": e.Message, "SenderFault": e.SenderFault})
		}
		return out
	}
	if op == "SendMessageBatch" {
		entries := make([]sqsfake.SendBatchEntry, len(req.Entries))
		byID := make(map[string]sqsfake.SendBatchEntry, len(req.Entries))
		for i, e := range req.Entries {
			entries[i] = sqsfake.SendBatchEntry{ID: e.ID, Message: queue.SendMessageInput{
				Body: e.MessageBody, MessageAttributes: attributesIn(e.MessageAttributes),
				MessageGroupID: e.MessageGroupID, MessageDeduplicationID: e.MessageDeduplicationID,
				Delay: time.Duration(e.DelaySeconds) * time.Second,
			}}
			byID[e.ID] = entries[i]
		}
		ok, failed, err := b.SendMessageBatch(ctx, req.QueueURL, entries)
		if err != nil {
			return nil, err
		}
		okJSON := make([]map[string]any, 0, len(ok))
		for _, r := range ok {
			in := byID[r.ID].Message
			e := map[string]any{"Id": r.ID, "MessageId": r.MessageID, "MD5OfMessageBody": md5Hex(in.Body)}
			if d := md5OfAttributes(in.MessageAttributes); d != "" {
				e["MD5OfMessageAttributes"] = d
			}
			if r.SequenceNumber != "" {
				e["SequenceNumber"] = r.SequenceNumber
			}
			okJSON = append(okJSON, e)
		}
		return map[string]any{"Successful": okJSON, "Failed": failedJSON(failed)}, nil
	}
	entries := make([]sqsfake.ReceiptBatchEntry, len(req.Entries))
	for i, e := range req.Entries {
		entries[i] = sqsfake.ReceiptBatchEntry{ID: e.ID, ReceiptHandle: e.ReceiptHandle, Timeout: time.Duration(e.VisibilityTimeout) * time.Second}
	}
	do := b.DeleteMessageBatch
	if op == "ChangeMessageVisibilityBatch" {
		do = b.ChangeMessageVisibilityBatch
	}
	ok, failed, err := do(ctx, req.QueueURL, entries)
	if err != nil {
		return nil, err
	}
	okJSON := make([]map[string]any, 0, len(ok))
	for _, id := range ok {
		okJSON = append(okJSON, map[string]any{"Id": id})
	}
	return map[string]any{"Successful": okJSON, "Failed": failedJSON(failed)}, nil
}

// md5OfAttributes is SQS's MD5OfMessageAttributes: over the attributes
// sorted by name, each as length-prefixed name, length-prefixed data type,
// a transport byte (1 string or number, 2 binary) and the length-prefixed
// value; "" when there are none.
func md5OfAttributes(attrs map[string]queue.Attribute) string {
	if len(attrs) == 0 {
		return ""
	}
	h := md5.New()
	field := func(b []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, n := range slices.Sorted(maps.Keys(attrs)) {
		a := attrs[n]
		field([]byte(n))
		field([]byte(a.DataType))
		if strings.HasPrefix(a.DataType, "Binary") {
			h.Write([]byte{2})
			field(a.BinaryValue)
		} else {
			h.Write([]byte{1})
			field([]byte(a.StringValue))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
