package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/classify"
	"github.com/mercadofresco/integration/cmd/mf-dlq/dlq/dataset"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/internal/localaws"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// sandbox is the rehearsal's AWS: the fake SQS, one Lambda event source
// mapping per source queue with a consumer behind it, and the CloudWatch
// metrics mf-dlq reads (NumberOfMessagesDeleted of what the consumers
// deleted, ApproximateAgeOfOldestMessage), all on one endpoint.
type sandbox struct {
	fake     *localaws.SQS
	clock    *offsetClock
	loaded   int // messages of the data set
	mappings []*sandboxMapping

	mu      sync.Mutex
	deletes map[string][]time.Time // source queue name -> when its consumer deleted a message
}

type sandboxMapping struct {
	uuid, functionARN             string
	queueURL, queueARN, queueName string
	consumer                      catalog.Consumer
	enabled                       bool // guarded by sandbox.mu
}

// Handler serves SQS (JSON protocol), the Lambda event source mapping
// calls (list, get, update) and CloudWatch's GetMetricData (RPC v2 CBOR).
func (sb *sandbox) Handler() http.Handler {
	sqsHandler := sb.fake.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/2015-03-31/event-source-mappings"):
			sb.serveLambda(w, r)
		case strings.HasPrefix(r.URL.Path, "/service/GraniteServiceVersion20100801/operation/"):
			sb.serveCloudWatch(w, r)
		default:
			sqsHandler.ServeHTTP(w, r)
		}
	})
}

// run lets the consumers work every interval until ctx is done.
func (sb *sandbox) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_, _ = sb.consumeOnce(ctx) // a failed round is retried on the next tick
		}
	}
}

// consumeOnce lets each enabled consumer receive until its queue returns
// nothing: it deletes what it accepts (sandboxAccepts) and fails the rest,
// which SQS's redrive policy moves back to the DLQ after maxReceiveCount
// receives. It returns how many messages were deleted.
func (sb *sandbox) consumeOnce(ctx context.Context) (int, error) {
	deleted := 0
	for _, m := range sb.mappings {
		sb.mu.Lock()
		on := m.enabled && m.consumer.Function != ""
		sb.mu.Unlock()
		if !on {
			continue
		}
		for range 50 {
			out, err := sb.fake.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &m.queueURL, MaxNumberOfMessages: 10,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}, MessageAttributeNames: []string{"All"}})
			if err != nil {
				return deleted, err
			}
			if len(out.Messages) == 0 {
				break
			}
			for _, msg := range out.Messages {
				if !sandboxAccepts(m.consumer, msg, sb.clock.Now()) {
					// Failed: visible again at once, one receive spent.
					if _, err := sb.fake.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &m.queueURL, ReceiptHandle: msg.ReceiptHandle}); err != nil {
						return deleted, err
					}
					continue
				}
				if _, err := sb.fake.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &m.queueURL, ReceiptHandle: msg.ReceiptHandle}); err != nil {
					return deleted, err
				}
				deleted++
				sb.mu.Lock()
				sb.deletes[m.queueName] = append(sb.deletes[m.queueName], sb.clock.Now())
				sb.mu.Unlock()
			}
		}
	}
	return deleted, nil
}

// sandboxAccepts is the sandbox consumer's verdict: the cause of the
// transient failures is fixed; poison (the consumer's content rules, as
// classify applies them), an order with the SKU the data scenario breaks,
// and a message older than the replay window without the re-admission
// mark still fail.
func sandboxAccepts(c catalog.Consumer, m types.Message, now time.Time) bool {
	o := dlq.OptionsOf(c)
	o.Now = now
	switch classify.Classify([]types.Message{m}, o).Messages[0].Class {
	case classify.Poison:
		return false
	case classify.Expired:
		if _, ok := m.MessageAttributes[lambdaapi.AttrReadmision]; !ok {
			return false
		}
	}
	return !strings.Contains(aws.ToString(m.Body), dataset.BadSKU)
}

type lambdaMappingJSON struct {
	UUID           string `json:"UUID"`
	FunctionArn    string `json:"FunctionArn"`
	EventSourceArn string `json:"EventSourceArn"`
	State          string `json:"State"`
	BatchSize      int    `json:"BatchSize"`
}

func (sb *sandbox) mappingJSON(m *sandboxMapping) lambdaMappingJSON {
	state := "Disabled"
	if m.enabled {
		state = "Enabled"
	}
	return lambdaMappingJSON{UUID: m.uuid, FunctionArn: m.functionARN, EventSourceArn: m.queueARN, State: state, BatchSize: 10}
}

// serveLambda answers ListEventSourceMappings (GET with EventSourceArn),
// GetEventSourceMapping (GET /UUID) and UpdateEventSourceMapping (PUT /UUID
// with Enabled).
func (sb *sandbox) serveLambda(w http.ResponseWriter, r *http.Request) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	uuid := strings.Trim(strings.TrimPrefix(r.URL.Path, "/2015-03-31/event-source-mappings"), "/")
	if uuid == "" && r.Method == http.MethodGet {
		arn := r.URL.Query().Get("EventSourceArn")
		out := struct {
			EventSourceMappings []lambdaMappingJSON `json:"EventSourceMappings"`
		}{EventSourceMappings: []lambdaMappingJSON{}}
		for _, m := range sb.mappings {
			if (arn == "" || m.queueARN == arn) && m.functionARN != "" {
				out.EventSourceMappings = append(out.EventSourceMappings, sb.mappingJSON(m))
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	var found *sandboxMapping
	for _, m := range sb.mappings {
		if m.uuid == uuid && m.functionARN != "" {
			found = m
		}
	}
	if found == nil {
		lambdaError(w, http.StatusNotFound, "ResourceNotFoundException", "The resource you requested does not exist. (event source mapping "+uuid+")")
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut:
		var in struct{ Enabled *bool }
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
			lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
			return
		}
		if in.Enabled != nil {
			found.enabled = *in.Enabled
		}
		writeJSON(w, http.StatusAccepted, sb.mappingJSON(found))
		return
	default:
		lambdaError(w, http.StatusBadRequest, "InvalidParameterValueException", "the sandbox serves only list, get and update of event source mappings")
		return
	}
	writeJSON(w, http.StatusOK, sb.mappingJSON(found))
}

// lambdaError answers as the Lambda API does for a user error of type typ.
func lambdaError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("X-Amzn-Errortype", typ)
	writeJSON(w, status, map[string]string{"Type": "User", "Message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client sees a truncated body if the connection broke
}

// serveCloudWatch answers GetMetricData for AWS/SQS NumberOfMessagesDeleted
// (Sum per period of the sandbox consumers' deletions) and
// ApproximateAgeOfOldestMessage (the oldest stored message now).
func (sb *sandbox) serveCloudWatch(w http.ResponseWriter, r *http.Request) {
	op := strings.TrimPrefix(r.URL.Path, "/service/GraniteServiceVersion20100801/operation/")
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		cborError(w, "InvalidParameterValue", err.Error())
		return
	}
	if op != "GetMetricData" {
		cborError(w, "InvalidAction", "the sandbox serves only GetMetricData")
		return
	}
	v, err := cbor.Decode(body)
	in, ok := v.(cbor.Map)
	if err != nil || !ok {
		cborError(w, "InvalidParameterValue", fmt.Sprintf("request is not a CBOR map: %v", err))
		return
	}
	start, _ := cbor.AsTime(in["StartTime"])
	end, _ := cbor.AsTime(in["EndTime"])
	results := cbor.List{}
	queries, _ := in["MetricDataQueries"].(cbor.List)
	for _, q := range queries {
		qm, _ := q.(cbor.Map)
		id, _ := qm["Id"].(cbor.String)
		stat, _ := qm["MetricStat"].(cbor.Map)
		metric, _ := stat["Metric"].(cbor.Map)
		name, _ := metric["MetricName"].(cbor.String)
		period, err := cbor.AsInt64(stat["Period"])
		if err != nil || period <= 0 {
			period = 60
		}
		queueName := ""
		dims, _ := metric["Dimensions"].(cbor.List)
		for _, d := range dims {
			dm, _ := d.(cbor.Map)
			if n, _ := dm["Name"].(cbor.String); n == "QueueName" {
				v, _ := dm["Value"].(cbor.String)
				queueName = string(v)
			}
		}
		ts, vals := sb.series(string(name), queueName, start, end, time.Duration(period)*time.Second)
		tl, vl := cbor.List{}, cbor.List{}
		for i := range ts {
			tl = append(tl, &cbor.Tag{ID: 1, Value: cbor.Float64(float64(ts[i].UnixMilli()) / 1e3)})
			vl = append(vl, cbor.Float64(vals[i]))
		}
		results = append(results, cbor.Map{"Id": id, "Label": name, "StatusCode": cbor.String("Complete"), "Timestamps": tl, "Values": vl})
	}
	writeCBOR(w, http.StatusOK, cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}})
}

// series computes a metric of a queue over [start, end) in periods.
func (sb *sandbox) series(metric, queueName string, start, end time.Time, period time.Duration) ([]time.Time, []float64) {
	var ts []time.Time
	var vs []float64
	switch metric {
	case "NumberOfMessagesDeleted":
		sb.mu.Lock()
		deletes := sb.deletes[queueName]
		sums := map[time.Time]float64{}
		for _, at := range deletes {
			if !at.Before(start) && at.Before(end) {
				sums[at.Truncate(period)]++
			}
		}
		sb.mu.Unlock()
		for p := start.Truncate(period); p.Before(end); p = p.Add(period) {
			if n, ok := sums[p]; ok {
				ts, vs = append(ts, p), append(vs, n)
			}
		}
	case "ApproximateAgeOfOldestMessage":
		for _, m := range sb.mappings {
			if m.queueName != queueName {
				continue
			}
			st, err := sb.fake.Inspect(m.queueURL)
			if err != nil || len(st) == 0 {
				continue
			}
			oldest := st[0].SentAt
			for _, s := range st {
				if s.SentAt.Before(oldest) {
					oldest = s.SentAt
				}
			}
			now := sb.clock.Now()
			ts, vs = append(ts, now.Truncate(period)), append(vs, now.Sub(oldest).Seconds())
		}
	}
	return ts, vs
}

func cborError(w http.ResponseWriter, code, msg string) {
	writeCBOR(w, http.StatusBadRequest, cbor.Map{"__type": cbor.String(code), "message": cbor.String(msg)})
}

func writeCBOR(w http.ResponseWriter, status int, v cbor.Map) {
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.WriteHeader(status)
	_, _ = w.Write(cbor.Encode(v)) // as writeJSON
}
