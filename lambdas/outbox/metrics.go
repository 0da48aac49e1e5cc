package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// Metric names and namespace shared by the publisher, the cleanup and the
// CDK alarms (constructs/outbox), so both sides cannot drift apart.
const (
	// MetricNamespace is the CloudWatch namespace of every outbox metric:
	// the project's custom namespace (platform.MetricNamespace, not
	// imported here to keep the CDK out of the Lambda binaries; the
	// construct tests check they agree).
	MetricNamespace = "MercadoFresco/Tienda"
	// DimensionEnvironment is the one dimension: dev, staging or prod.
	DimensionEnvironment = "Entorno"

	// MetricPending is the number of unpublished, unparked rows (gauge).
	MetricPending = "PendingEvents"
	// MetricOldestAge is the age in seconds of the oldest pending row (gauge).
	MetricOldestAge = "OldestPendingAgeSeconds"
	// MetricParked is the number of parked (poison) rows (gauge).
	MetricParked = "ParkedEvents"
	// MetricPublished counts rows marked published.
	MetricPublished = "PublishedEvents"
	// MetricFailedAttempts counts rows released after a failed attempt.
	MetricFailedAttempts = "FailedAttempts"
	// MetricNewlyParked counts rows parked since the last emission.
	MetricNewlyParked = "NewlyParkedEvents"
	// MetricDeleted counts rows removed by the cleanup.
	MetricDeleted = "DeletedEvents"
)

// CloudWatch units used here.
const (
	UnitCount   = "Count"
	UnitSeconds = "Seconds"
)

// Metric is one value of an EMF record.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// EMFWriter writes CloudWatch Embedded Metric Format records, one JSON
// object per line, to w (os.Stdout in Lambda, where the log agent turns
// them into metrics asynchronously: no PutMetricData call, no CloudWatch
// VPC endpoint on the hot path, no extra latency or failure mode).
//
// It is hand-written because aws-lambda-go has no EMF helper and the
// format is a small, stable JSON document; a dependency for ~50 lines is
// not worth its upkeep. Safe for concurrent use.
type EMFWriter struct {
	mu         sync.Mutex
	w          io.Writer
	namespace  string
	dimensions map[string]string
	now        func() time.Time
}

// NewEMFWriter returns a writer for namespace with the given dimension
// values (one dimension set containing all of them).
func NewEMFWriter(w io.Writer, namespace string, dimensions map[string]string) *EMFWriter {
	d := make(map[string]string, len(dimensions))
	for k, v := range dimensions {
		d[k] = v
	}
	return &EMFWriter{w: w, namespace: namespace, dimensions: d, now: time.Now}
}

type emfMetricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

type emfDirective struct {
	Namespace  string         `json:"Namespace"`
	Dimensions [][]string     `json:"Dimensions"`
	Metrics    []emfMetricDef `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// Write emits one record holding all metrics. EMF allows 100 metrics per
// record; more is an error rather than silent loss.
func (e *EMFWriter) Write(metrics ...Metric) error {
	if len(metrics) == 0 {
		return nil
	}
	if len(metrics) > 100 {
		return fmt.Errorf("outbox: EMF record with %d metrics (max 100)", len(metrics))
	}
	doc := make(map[string]any, len(metrics)+len(e.dimensions)+1)
	dimNames := make([]string, 0, len(e.dimensions))
	for k, v := range e.dimensions {
		dimNames = append(dimNames, k)
		doc[k] = v
	}
	sort.Strings(dimNames)
	defs := make([]emfMetricDef, 0, len(metrics))
	for _, m := range metrics {
		if _, clash := doc[m.Name]; clash || m.Name == "_aws" || m.Name == "" {
			return fmt.Errorf("outbox: EMF metric name %q empty or duplicated", m.Name)
		}
		defs = append(defs, emfMetricDef{Name: m.Name, Unit: m.Unit})
		doc[m.Name] = m.Value
	}
	doc["_aws"] = emfMeta{
		Timestamp: e.now().UnixMilli(),
		CloudWatchMetrics: []emfDirective{{
			Namespace:  e.namespace,
			Dimensions: [][]string{dimNames},
			Metrics:    defs,
		}},
	}
	line, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("outbox: encode EMF: %w", err)
	}
	line = append(line, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.w.Write(line); err != nil {
		return fmt.Errorf("outbox: write EMF: %w", err)
	}
	return nil
}

// Gauges is the state of the outbox that the alarms watch.
type Gauges struct {
	Pending          int64
	OldestPendingAge time.Duration
	Parked           int64
}

// Metrics returns the gauges as EMF metrics.
func (g Gauges) Metrics() []Metric {
	return []Metric{
		{Name: MetricPending, Unit: UnitCount, Value: float64(g.Pending)},
		{Name: MetricOldestAge, Unit: UnitSeconds, Value: g.OldestPendingAge.Seconds()},
		{Name: MetricParked, Unit: UnitCount, Value: float64(g.Parked)},
	}
}

// ReadGauges measures the outbox with the database clock (no skew with
// the writers' creado_en). All three use the partial indexes.
func ReadGauges(ctx context.Context, db DB) (Gauges, error) {
	var g Gauges
	var ageMs float64
	err := db.QueryRow(ctx, `
SELECT
  (SELECT count(*) FROM outbox WHERE publicado_en IS NULL AND aparcado_en IS NULL),
  (SELECT coalesce(extract(epoch FROM now() - min(creado_en)) * 1000, 0)::float8
     FROM outbox WHERE publicado_en IS NULL AND aparcado_en IS NULL),
  (SELECT count(*) FROM outbox WHERE aparcado_en IS NOT NULL)`).Scan(&g.Pending, &ageMs, &g.Parked)
	if err != nil {
		return Gauges{}, fmt.Errorf("outbox: read gauges: %w", err)
	}
	if ageMs < 0 {
		ageMs = 0
	}
	g.OldestPendingAge = time.Duration(ageMs * float64(time.Millisecond))
	return g, nil
}
