package localaws

// SES: a fake of Amazon SES v2's SendEmail (REST-JSON,
// POST /v2/email/outbound-emails) good enough for the real SDK client,
// on Service (ledger, faults): 200 {"MessageId"} for a well-formed request
// of the expected configuration set, or the error SES answers in the
// current Mode (throttling, a refused message, an internal failure) with
// X-Amzn-Errortype. SES has no idempotency key: every accepted request is
// an e-mail sent.

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// SESPath is SendEmail's path.
const SESPath = "/v2/email/outbound-emails"

// SESMode is how the fake answers a well-formed request.
type SESMode int32

const (
	SESSends     SESMode = iota // sends
	SESThrottled                // 429 TooManyRequestsException
	SESRejects                  // 400 MessageRejected
	SESFails                    // 500 InternalServiceErrorException
)

// SES is the fake of SES v2 SendEmail. The embedded server gives URL, Requests, Effects, Inject
// and Close.
type SES struct {
	*Service
	mode atomic.Int32
	sent atomic.Int64
}

// SESRequest is the part of a SendEmail request the fake checks.
type SESRequest struct {
	FromEmailAddress     string
	ConfigurationSetName string
	Destination          struct{ ToAddresses []string }
	Content              struct {
		Simple struct{ Subject struct{ Data string } }
	}
	EmailTags []struct{ Name, Value string }
}

// NewSES starts the fake; requests must name configSet.
func NewSES(configSet string, opts ...ServiceOption) *SES {
	f := &SES{}
	f.Service = NewService(func(r ServiceRequest) ServiceResponse {
		var in SESRequest
		if r.Path != SESPath || json.Unmarshal(r.Body, &in) != nil || in.ConfigurationSetName != configSet ||
			in.FromEmailAddress == "" || len(in.Destination.ToAddresses) != 1 || in.Content.Simple.Subject.Data == "" || len(in.EmailTags) == 0 {
			return SESError(400, "BadRequestException", "bad request: "+string(r.Body))
		}
		switch SESMode(f.mode.Load()) {
		case SESThrottled:
			return SESError(429, "TooManyRequestsException", "Maximum sending rate exceeded.")
		case SESRejects:
			return SESError(400, "MessageRejected", "Email address is not verified.")
		case SESFails:
			return SESError(500, "InternalServiceErrorException", "internal failure")
		}
		return JSON(200, fmt.Sprintf(`{"MessageId":"ses-%d"}`, f.sent.Add(1)))
	}, opts...)
	return f
}

// SetMode changes how the next requests are answered.
func (f *SES) SetMode(m SESMode) { f.mode.Store(int32(m)) }

// SESTag returns the value of the e-mail tag name of a request body ("" when
// absent).
func SESTag(body []byte, name string) string {
	var in SESRequest
	_ = json.Unmarshal(body, &in)
	for _, t := range in.EmailTags {
		if t.Name == name {
			return t.Value
		}
	}
	return ""
}

// SESError is an SES error answer.
func SESError(status int, code, msg string) ServiceResponse {
	r := JSON(status, fmt.Sprintf(`{"message":%q}`, msg))
	r.Header.Set("X-Amzn-Errortype", code)
	return r
}
