package outbox

import (
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// PutEvents limits (EventBridge quotas that cannot be raised).
const (
	// MaxEntriesPerCall is the most entries one PutEvents call accepts.
	MaxEntriesPerCall = 10
	// MaxEntryBytes is the largest entry, and the largest whole request,
	// EventBridge accepts: 256 KB, measured as EntrySize does.
	MaxEntryBytes = 256 * 1024
)

// Detail is the metadata the publisher adds to every event detail. The
// detail EventBridge carries is the payload given to Add (a JSON object,
// flat, so rules and consumers read detail.pedido_id, detail.version...)
// with these three keys added at its top level. The outbox row id travels
// in it because PutEvents has no field for a caller-chosen event id
// (EventBridge assigns its own "id"), and consumers need a stable id to
// de-duplicate crash replays. Payloads may not use these keys (Add
// refuses them: ErrInvalidEvent).
type Detail struct {
	// EventID is the outbox row id: the same value on every replay.
	EventID string `json:"id_evento"`
	// AggregateID is the entity the event is about, e.g. the pedido_id.
	AggregateID string `json:"agregado_id"`
	// CreatedAt is when the event was written (the order transaction).
	CreatedAt time.Time `json:"creado_en"`
}

// ReservedDetailKeys are the top-level detail keys the publisher sets.
var ReservedDetailKeys = []string{"id_evento", "agregado_id", "creado_en"}

// EntrySize returns the size EventBridge charges an entry against the
// 256 KB limit, computed the way the EventBridge user guide specifies
// ("Calculating PutEvents event entry size"): 14 bytes if Time is set, plus
// the UTF-8 byte length of Source, DetailType, Detail and every Resources
// element. EventBusName and TraceHeader do not count.
func EntrySize(e types.PutEventsRequestEntry) int {
	n := 0
	if e.Time != nil {
		n += 14
	}
	n += utf8Len(aws.ToString(e.Source))
	n += utf8Len(aws.ToString(e.DetailType))
	n += utf8Len(aws.ToString(e.Detail))
	for _, r := range e.Resources {
		n += utf8Len(r)
	}
	return n
}

// utf8Len is the UTF-8 encoded length. Go strings are bytes already; an
// invalid sequence would be re-encoded by the SDK's JSON encoder as U+FFFD
// (3 bytes), so count it that way to never underestimate.
func utf8Len(s string) int {
	if utf8.ValidString(s) {
		return len(s)
	}
	n := 0
	for _, r := range s {
		n += utf8.RuneLen(r)
	}
	return n
}

// pack splits entries (given by their sizes, in claim order) into PutEvents
// calls of at most maxEntries entries and maxBytes total, preserving order.
// Entries larger than maxBytes on their own are returned in tooLarge and
// never sent.
func pack(sizes []int, maxEntries, maxBytes int) (calls [][]int, tooLarge []int) {
	var cur []int
	curBytes := 0
	for i, s := range sizes {
		if s > maxBytes {
			tooLarge = append(tooLarge, i)
			continue
		}
		if len(cur) == maxEntries || curBytes+s > maxBytes {
			calls = append(calls, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, i)
		curBytes += s
	}
	if len(cur) > 0 {
		calls = append(calls, cur)
	}
	return calls, tooLarge
}
