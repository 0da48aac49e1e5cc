package sqsconsumer_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/metrics"
	"github.com/mercadofresco/integration/lambdas/sqsconsumer"
)

// recorder keeps every metric written, record by record.
type recorder struct{ records [][]metrics.Metric }

func (r *recorder) Write(ms ...metrics.Metric) error {
	r.records = append(r.records, ms)
	return nil
}

func value(ms []metrics.Metric, name string) float64 {
	for _, m := range ms {
		if m.Name == name {
			return m.Value
		}
	}
	return -1
}

// Every consumer measures the queue wait of the batch before processing
// it; order preparation also measures the confirmations; a measurement
// that fails never fails the batch.
func TestMeasuredWritesTheObjectivesThenProcesses(t *testing.T) {
	sent := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := func(wait time.Duration, body string) events.SQSMessage {
		return events.SQSMessage{Body: body, Attributes: map[string]string{
			"SentTimestamp":                    strconv.FormatInt(sent.UnixMilli(), 10),
			"ApproximateFirstReceiveTimestamp": strconv.FormatInt(sent.Add(wait).UnixMilli(), 10),
			"ApproximateReceiveCount":          "1",
		}}
	}
	late := `{"creado_en":"2026-12-01T09:00:00Z","confirmado_en":"2026-12-01T10:00:00Z"}`
	ev := events.SQSEvent{Records: []events.SQSMessage{rec(time.Second, late), rec(lambdaapi.SLOQueueWait+time.Minute, late)}}
	processed := 0
	process := func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		processed++
		return events.SQSEventResponse{}, nil
	}
	failing := func(metrics.Emitter, events.SQSEvent) error { return errors.New("stdout closed") }

	w := &recorder{}
	h := sqsconsumer.Measured(w, slog.New(slog.DiscardHandler), process, sqsconsumer.MeasureConfirmations, failing)
	if _, err := h(context.Background(), ev); err != nil || processed != 1 {
		t.Fatalf("processed %d times, err %v", processed, err)
	}
	if len(w.records) != 3 {
		t.Fatalf("%d records, want the queue wait's and two confirmations: %v", len(w.records), w.records)
	}
	if got := value(w.records[0], lambdaapi.MetricMessagesReceived); got != 2 {
		t.Errorf("received %v, want 2", got)
	}
	if got := value(w.records[0], lambdaapi.MetricMessagesLate); got != 1 {
		t.Errorf("late messages %v, want 1", got)
	}
	for _, r := range w.records[1:] {
		if value(r, lambdaapi.MetricOrdersConfirmedLate) != 1 {
			t.Errorf("a confirmation an hour after its commit is late: %v", r)
		}
	}
}
