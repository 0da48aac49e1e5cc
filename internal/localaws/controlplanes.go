package localaws

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// The control planes an operator's tool calls beside SQS (mf-dlq's
// rehearsal sandbox): Lambda's event source mappings, which it lists and
// enables or disables, and CloudWatch's GetMetricData.

// Mapping is a Lambda event source mapping of a queue.
type Mapping struct {
	UUID, FunctionArn, EventSourceArn string
	Enabled                           bool
}

// Mappings are event source mappings, served as Lambda's REST API does for
// ListEventSourceMappings (by EventSourceArn), GetEventSourceMapping and
// UpdateEventSourceMapping (Enabled). It is safe for concurrent use.
type Mappings struct {
	mu   sync.Mutex
	list []*Mapping
}

// Add adds m.
func (s *Mappings) Add(m Mapping) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, &m)
}

// Enabled reports whether the mapping uuid is enabled.
func (s *Mappings) Enabled(uuid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.list {
		if m.UUID == uuid {
			return m.Enabled
		}
	}
	return false
}

func (s *Mappings) serveHTTP(w http.ResponseWriter, r *http.Request, uuid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	arn, found := r.URL.Query().Get("EventSourceArn"), []map[string]any{}
	for _, m := range s.list {
		if uuid != "" && m.UUID != uuid || uuid == "" && arn != "" && m.EventSourceArn != arn {
			continue
		}
		var in struct{ Enabled *bool }
		if r.Method == http.MethodPut && json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in) == nil && in.Enabled != nil {
			m.Enabled = *in.Enabled
		}
		found = append(found, map[string]any{"UUID": m.UUID, "FunctionArn": m.FunctionArn, "EventSourceArn": m.EventSourceArn, "BatchSize": 10,
			"State": map[bool]string{true: "Enabled", false: "Disabled"}[m.Enabled]})
	}
	var out any = map[string]any{"EventSourceMappings": found}
	w.Header().Set("Content-Type", "application/json")
	if uuid != "" && len(found) == 0 {
		w.Header().Set("X-Amzn-Errortype", "ResourceNotFoundException")
		w.WriteHeader(http.StatusNotFound)
		out = map[string]string{"Type": "User", "Message": "no event source mapping " + uuid}
	} else if uuid != "" {
		out = found[0]
	}
	_ = json.NewEncoder(w).Encode(out) // a broken connection shows at the client
}

// MetricData answers CloudWatch's GetMetricData: the datapoints of metric
// for the queue named by the query's QueueName dimension in [start, end).
type MetricData func(metric, queue string, start, end time.Time) map[time.Time]float64

func (f MetricData) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	v, _ := cbor.Decode(body)
	in, _ := v.(cbor.Map)
	start, _ := cbor.AsTime(in["StartTime"])
	end, _ := cbor.AsTime(in["EndTime"])
	queries, _ := in["MetricDataQueries"].(cbor.List)
	results := cbor.List{}
	for _, q := range queries {
		qm, _ := q.(cbor.Map)
		stat, _ := qm["MetricStat"].(cbor.Map)
		metric, _ := stat["Metric"].(cbor.Map)
		dims, _ := metric["Dimensions"].(cbor.List)
		name, _ := metric["MetricName"].(cbor.String)
		var queue cbor.String
		for _, d := range dims {
			if dm, _ := d.(cbor.Map); dm["Name"] == cbor.String("QueueName") {
				queue, _ = dm["Value"].(cbor.String)
			}
		}
		tl, vl := cbor.List{}, cbor.List{}
		for at, v := range f(string(name), string(queue), start, end) {
			tl, vl = append(tl, &cbor.Tag{ID: 1, Value: cbor.Float64(float64(at.UnixMilli()) / 1e3)}), append(vl, cbor.Float64(v))
		}
		results = append(results, cbor.Map{"Id": qm["Id"], "Label": name, "StatusCode": cbor.String("Complete"), "Timestamps": tl, "Values": vl})
	}
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(cbor.Encode(cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}))
}

// OperatorEndpoint serves SQS (its wire), the mappings and the metrics on one
// endpoint, as an SDK client with BaseEndpoint set calls them.
func OperatorEndpoint(sqs *SQS, mappings *Mappings, metrics MetricData) http.Handler {
	const lambdaPath, cloudWatchPath = "/2015-03-31/event-source-mappings", "/service/GraniteServiceVersion20100801/operation/GetMetricData"
	wire := sqs.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, lambdaPath):
			mappings.serveHTTP(w, r, strings.Trim(strings.TrimPrefix(r.URL.Path, lambdaPath), "/"))
		case r.URL.Path == cloudWatchPath:
			metrics.serveHTTP(w, r)
		default:
			wire.ServeHTTP(w, r)
		}
	})
}
