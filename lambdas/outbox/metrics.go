package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
)

// Gauges is the state of the outbox that the alarms watch.
type Gauges struct {
	Pending          int64
	OldestPendingAge time.Duration
	Parked           int64
}

// Metrics returns the gauges as EMF metrics.
func (g Gauges) Metrics() []metrics.Metric {
	return []metrics.Metric{
		{Name: lambdaapi.MetricOutboxPending, Unit: metrics.UnitCount, Value: float64(g.Pending)},
		{Name: lambdaapi.MetricOutboxOldestAge, Unit: metrics.UnitSeconds, Value: g.OldestPendingAge.Seconds()},
		{Name: lambdaapi.MetricOutboxParked, Unit: metrics.UnitCount, Value: float64(g.Parked)},
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
	g.OldestPendingAge = time.Duration(max(ageMs, 0) * float64(time.Millisecond))
	return g, nil
}
