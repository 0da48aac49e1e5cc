package cost

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

//go:embed usage.json
var defaultUsage []byte

// Usage is the usage model: the shop's volumes and what each function does
// per invocation (usage.json documents every field in its notes).
type Usage struct {
	About                   string                   `json:"about"`
	OrdersPerMonth          float64                  `json:"orders_per_month"`
	ExecutionsInFlightPeak  float64                  `json:"executions_in_flight_peak"`
	HoursPerMonth           float64                  `json:"hours_per_month"`
	LinesPerOrder           float64                  `json:"lines_per_order"`
	DeclinedFraction        float64                  `json:"declined_fraction"`
	TaskRetriesPerExecution float64                  `json:"task_retries_per_execution"`
	BusEvents               []BusEvent               `json:"bus_events"`
	Functions               map[string]FunctionUsage `json:"functions"`
	Tables                  map[string]TableUsage    `json:"tables"`
	Aurora                  struct {
		StorageGB  float64 `json:"storage_gb"`
		IOPerOrder float64 `json:"io_per_order"`
	} `json:"aurora"`
	Cache struct {
		StorageGB float64 `json:"storage_gb"`
	} `json:"cache"`
	Logs struct {
		StateMachineKBPerTransition float64 `json:"state_machine_kb_per_transition"`
		FlowLogsGB                  float64 `json:"flow_logs_gb"`
		PostgresqlGB                float64 `json:"postgresql_gb"`
		CompressionRatio            float64 `json:"compression_ratio"`
		SESEventsPerEmail           float64 `json:"ses_events_per_email"`
		SESEventKB                  float64 `json:"ses_event_kb"`
	} `json:"logs"`
	SQS struct {
		ESMIdlePollers  float64 `json:"esm_idle_pollers"`
		LongPollSeconds float64 `json:"long_poll_seconds"`
	} `json:"sqs"`
	KMSCacheSeconds float64 `json:"kms_cache_seconds"`
	// DesignMessagingUSD is the design's monthly figure per messaging
	// service (Layer of a Line), which the report compares with.
	DesignMessagingUSD map[string]float64 `json:"design_messaging_usd"`
	// Environments override the volumes of an environment.
	Environments map[string]struct {
		OrdersPerMonth float64 `json:"orders_per_month"`
	} `json:"environments"`
	Notes map[string]string `json:"notes"`
}

// BusEvent is one kind of event the shop's producers put on the bus.
type BusEvent struct {
	Name     string  `json:"name"`
	PerOrder float64 `json:"per_order"`
	KB       float64 `json:"kb"`
	// Producer is the SPEC name of the function or pipe that puts it.
	Producer string         `json:"producer"`
	Event    map[string]any `json:"event"`
}

// FunctionUsage is what one function does per invocation (per message for
// the DynamoDB units).
type FunctionUsage struct {
	MS                    float64                `json:"ms"`
	LogKB                 float64                `json:"log_kb"`
	MessagesPerInvocation float64                `json:"messages_per_invocation"`
	DynamoDB              map[string]TableAccess `json:"dynamodb"`
	CacheECPU             float64                `json:"cache_ecpu"`
	EgressKB              float64                `json:"egress_kb"`
	SESEmails             float64                `json:"ses_emails"`
	SecretsCalls          float64                `json:"secrets_calls"`
	DeployOnly            bool                   `json:"deploy_only"`
}

// TableAccess is request units per message.
type TableAccess struct {
	WRU float64 `json:"wru"`
	RRU float64 `json:"rru"`
}

// TableUsage is a table's size and the traffic no function of the app
// makes (the shop's own writes).
type TableUsage struct {
	StorageGB   float64 `json:"storage_gb"`
	WRUPerOrder float64 `json:"wru_per_order"`
	RRUPerOrder float64 `json:"rru_per_order"`
	// Messaging marks a table of the messaging layer (compared with the
	// design's DynamoDB figure).
	Messaging bool `json:"messaging"`
}

// DefaultUsage is the committed usage model (usage.json).
func DefaultUsage() (*Usage, error) { return ParseUsage(defaultUsage) }

// LoadUsage reads a usage model from a file.
func LoadUsage(path string) (*Usage, error) { return load(path, ParseUsage) }

// ParseUsage parses and validates a usage model: known fields only,
// positive volumes, fractions in [0, 1], and a note for every top-level
// value (a number nobody can trace is not a model).
func ParseUsage(raw []byte) (*Usage, error) {
	var u Usage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("%w: usage model: %v", ErrInvalid, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("%w: usage model: %v", ErrInvalid, err)
	}
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: usage model: "+format, append([]any{ErrInvalid}, a...)...))
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "about" && k != "notes" && u.Notes[k] == "" {
			bad("%s has no note saying where it comes from", k)
		}
	}
	for k := range u.Notes {
		if _, ok := top[k]; !ok {
			bad("note for %s, which the model does not have", k)
		}
	}
	positive := map[string]float64{"orders_per_month": u.OrdersPerMonth, "hours_per_month": u.HoursPerMonth, "lines_per_order": u.LinesPerOrder,
		"logs.compression_ratio": u.Logs.CompressionRatio, "sqs.long_poll_seconds": u.SQS.LongPollSeconds, "kms_cache_seconds": u.KMSCacheSeconds}
	for _, k := range slices.Sorted(maps.Keys(positive)) {
		if positive[k] <= 0 {
			bad("%s must be positive, not %v", k, positive[k])
		}
	}
	for k, f := range map[string]float64{"declined_fraction": u.DeclinedFraction, "task_retries_per_execution": u.TaskRetriesPerExecution} {
		if f < 0 || f > 1 {
			bad("%s is %v, not a fraction", k, f)
		}
	}
	for _, e := range u.BusEvents {
		if e.Name == "" || e.PerOrder < 0 || e.KB <= 0 || e.Producer == "" || e.Event["source"] == nil || e.Event["detail-type"] == nil {
			bad("bus event %q needs per_order, kb, producer and an event with source and detail-type", e.Name)
		}
	}
	for name, f := range u.Functions {
		if !f.DeployOnly && f.MS <= 0 {
			bad("function %s: ms must be positive (or deploy_only)", name)
		}
		if f.MessagesPerInvocation < 0 {
			bad("function %s: messages_per_invocation is negative", name)
		}
	}
	for name, o := range u.Environments {
		if o.OrdersPerMonth <= 0 {
			bad("environment %s: orders_per_month must be positive", name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &u, nil
}

// forEnvironment returns the model with env's overrides applied.
func (u *Usage) forEnvironment(env string) *Usage {
	c := *u
	if o, ok := u.Environments[env]; ok {
		c.OrdersPerMonth = o.OrdersPerMonth
	}
	return &c
}
