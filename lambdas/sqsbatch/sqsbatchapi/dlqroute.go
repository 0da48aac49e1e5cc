// Package sqsbatchapi is the contract between the CDK (constructs/reliablequeue)
// and a consumer Lambda (lambdas/sqsbatch) about where each source queue's
// dead-letter queue is: a JSON object in one environment variable mapping the
// source queue's name to its DLQ's URL. One variable, so that a function that
// consumes several queues sends each poison message to the DLQ of the queue
// it came from. It depends on the standard library only.
package sqsbatchapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Env is the environment variable that carries the routes.
const Env = "DLQ_URLS"

// ErrInvalid is wrapped by Parse errors.
var ErrInvalid = errors.New("sqsbatchapi: invalid routes")

// Routes maps a source queue name to its DLQ URL.
type Routes map[string]string

// Parse reads the variable's value. An empty value is no routes.
func Parse(s string) (Routes, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Routes{}, nil
	}
	var r Routes
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("%w: %s is not a JSON object of queue name to DLQ URL: %w", ErrInvalid, Env, err)
	}
	for name, u := range r {
		pu, err := url.Parse(u)
		if name == "" || err != nil || pu.Scheme != "https" || pu.Host == "" || strings.Count(strings.Trim(pu.Path, "/"), "/") != 1 {
			return nil, fmt.Errorf("%w: %s: %q -> %q is not a queue name and an SQS queue URL (https://<host>/<account>/<queue>)", ErrInvalid, Env, name, u)
		}
	}
	return r, nil
}

// For returns the DLQ URL of the queue an event source ARN names
// (arn:aws:sqs:<region>:<account>:<name>).
func (r Routes) For(eventSourceARN string) (string, bool) {
	name := eventSourceARN[strings.LastIndex(eventSourceARN, ":")+1:]
	u, ok := r[name]
	return u, ok
}
