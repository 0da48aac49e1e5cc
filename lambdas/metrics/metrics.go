// Package metrics writes CloudWatch metrics from Lambda functions in the
// Embedded Metric Format (EMF): one JSON object per line on the function's
// standard output, which CloudWatch Logs turns into metrics asynchronously.
// There is no PutMetricData call on the hot path, so no CloudWatch endpoint in
// the VPC, no added latency and no new failure mode.
//
// It is hand-written because aws-lambda-go has no EMF helper and the format is
// a small, stable JSON document; a dependency for ~100 lines is not worth its
// upkeep.
package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// CloudWatch units used by the project.
const (
	UnitCount        = "Count"
	UnitSeconds      = "Seconds"
	UnitMilliseconds = "Milliseconds"
)

// MaxMetricsPerRecord is EMF's limit of metrics in one record.
const MaxMetricsPerRecord = 100

// ErrInvalidRecord is wrapped by Write when a record cannot be expressed in
// EMF (too many metrics, an empty or duplicated name).
var ErrInvalidRecord = errors.New("metrics: invalid EMF record")

// Metric is one value of an EMF record.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Emitter is what code that reports metrics needs. *Writer implements it;
// tests may pass their own.
type Emitter interface {
	Write(metrics ...Metric) error
}

// Discard is an Emitter that drops every metric.
var Discard Emitter = discard{}

type discard struct{}

func (discard) Write(...Metric) error { return nil }

// Writer writes EMF records to an io.Writer. Safe for concurrent use: each
// record is one Write call on the underlying writer, under a lock, so lines
// never interleave.
type Writer struct {
	mu         sync.Mutex
	w          io.Writer
	namespace  string
	dimensions map[string]string
	now        func() time.Time
}

// NewWriter returns a writer for namespace with the given dimension values
// (one dimension set containing all of them).
func NewWriter(w io.Writer, namespace string, dimensions map[string]string) *Writer {
	return &Writer{w: w, namespace: namespace, dimensions: maps.Clone(dimensions), now: time.Now}
}

// ForEnvironment is the project's usual writer: Namespace, one dimension
// Entorno=env.
func ForEnvironment(w io.Writer, env string) *Writer {
	return NewWriter(w, lambdaapi.Namespace, map[string]string{lambdaapi.DimensionEnvironment: env})
}

// WithClock makes the writer stamp records with now (tests).
func (e *Writer) WithClock(now func() time.Time) *Writer {
	e.now = now
	return e
}

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type meta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Write emits one record holding all metrics. More than MaxMetricsPerRecord
// metrics, or an empty or duplicated name, is an error wrapping
// ErrInvalidRecord rather than a silent loss.
func (e *Writer) Write(metrics ...Metric) error {
	if len(metrics) == 0 {
		return nil
	}
	if len(metrics) > MaxMetricsPerRecord {
		return fmt.Errorf("%w: %d metrics (max %d)", ErrInvalidRecord, len(metrics), MaxMetricsPerRecord)
	}
	doc := make(map[string]any, len(metrics)+len(e.dimensions)+1)
	dimNames := slices.Sorted(maps.Keys(e.dimensions))
	for _, k := range dimNames {
		doc[k] = e.dimensions[k]
	}
	defs := make([]metricDef, 0, len(metrics))
	for _, m := range metrics {
		if _, clash := doc[m.Name]; clash || m.Name == "_aws" || m.Name == "" {
			return fmt.Errorf("%w: metric name %q empty or duplicated", ErrInvalidRecord, m.Name)
		}
		defs = append(defs, metricDef{Name: m.Name, Unit: m.Unit})
		doc[m.Name] = m.Value
	}
	doc["_aws"] = meta{
		Timestamp: e.now().UnixMilli(),
		CloudWatchMetrics: []directive{{
			Namespace:  e.namespace,
			Dimensions: [][]string{dimNames},
			Metrics:    defs,
		}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("metrics: encode EMF: %w", err)
	}
	line = append(line, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.w.Write(line); err != nil {
		return fmt.Errorf("metrics: write EMF: %w", err)
	}
	return nil
}
