// Package fakeses is a fake of Amazon SES v2's SendEmail (REST-JSON,
// POST /v2/email/outbound-emails) good enough for the real SDK client,
// on fakehttp (ledger, faults): 200 {"MessageId"} for a well-formed request
// of the expected configuration set, or the error SES answers in the
// current Mode (throttling, a refused message, an internal failure) with
// X-Amzn-Errortype. SES has no idempotency key: every accepted request is
// an e-mail sent.
package fakeses

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/mercadofresco/integration/internal/fakehttp"
)

// Path is SendEmail's path.
const Path = "/v2/email/outbound-emails"

// Mode is how the fake answers a well-formed request.
type Mode int32

const (
	OK        Mode = iota // sends
	Throttled             // 429 TooManyRequestsException
	Rejects               // 400 MessageRejected
	Fails                 // 500 InternalServiceErrorException
)

// SES is the fake. The embedded server gives URL, Requests, Effects, Inject
// and Close.
type SES struct {
	*fakehttp.Server
	mode atomic.Int32
	sent atomic.Int64
}

// Request is the part of a SendEmail request the fake checks.
type Request struct {
	FromEmailAddress     string
	ConfigurationSetName string
	Destination          struct{ ToAddresses []string }
	Content              struct {
		Simple struct{ Subject struct{ Data string } }
	}
	EmailTags []struct{ Name, Value string }
}

// New starts the fake; requests must name configSet.
func New(configSet string, opts ...fakehttp.Option) *SES {
	f := &SES{}
	f.Server = fakehttp.New(func(r fakehttp.Request) fakehttp.Response {
		var in Request
		if r.Path != Path || json.Unmarshal(r.Body, &in) != nil || in.ConfigurationSetName != configSet ||
			in.FromEmailAddress == "" || len(in.Destination.ToAddresses) != 1 || in.Content.Simple.Subject.Data == "" || len(in.EmailTags) == 0 {
			return Error(400, "BadRequestException", "bad request: "+string(r.Body))
		}
		switch Mode(f.mode.Load()) {
		case Throttled:
			return Error(429, "TooManyRequestsException", "Maximum sending rate exceeded.")
		case Rejects:
			return Error(400, "MessageRejected", "Email address is not verified.")
		case Fails:
			return Error(500, "InternalServiceErrorException", "internal failure")
		}
		return fakehttp.JSON(200, fmt.Sprintf(`{"MessageId":"ses-%d"}`, f.sent.Add(1)))
	}, opts...)
	return f
}

// SetMode changes how the next requests are answered.
func (f *SES) SetMode(m Mode) { f.mode.Store(int32(m)) }

// Tag returns the value of the e-mail tag name of a request body ("" when
// absent).
func Tag(body []byte, name string) string {
	var in Request
	_ = json.Unmarshal(body, &in)
	for _, t := range in.EmailTags {
		if t.Name == name {
			return t.Value
		}
	}
	return ""
}

// Error is an SES error answer.
func Error(status int, code, msg string) fakehttp.Response {
	r := fakehttp.JSON(status, fmt.Sprintf(`{"message":%q}`, msg))
	r.Header.Set("X-Amzn-Errortype", code)
	return r
}
