package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

func TestWriteEmitsOneEMFLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := ForEnvironment(&buf, "dev").WithClock(func() time.Time { return time.UnixMilli(1700000000123) })
	if err := w.Write(
		Metric{Name: "PendingEvents", Unit: UnitCount, Value: 7},
		Metric{Name: "OldestPendingAgeSeconds", Unit: UnitSeconds, Value: 1.5},
	); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("want exactly one JSON line, got %q", line)
	}
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Entorno string
		Pending float64 `json:"PendingEvents"`
		Oldest  float64 `json:"OldestPendingAgeSeconds"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	cw := doc.AWS.CloudWatchMetrics
	if doc.AWS.Timestamp != 1700000000123 || len(cw) != 1 || cw[0].Namespace != lambdaapi.Namespace ||
		fmt.Sprint(cw[0].Dimensions) != "[[Entorno]]" || len(cw[0].Metrics) != 2 || cw[0].Metrics[1].Unit != UnitSeconds {
		t.Fatalf("bad EMF metadata: %s", line)
	}
	if doc.Entorno != "dev" || doc.Pending != 7 || doc.Oldest != 1.5 {
		t.Fatalf("bad EMF values: %s", line)
	}
}

func TestWriteRejectsInvalidRecords(t *testing.T) {
	t.Parallel()
	many := make([]Metric, MaxMetricsPerRecord+1)
	for i := range many {
		many[i] = Metric{Name: fmt.Sprint("m", i)}
	}
	for name, ms := range map[string][]Metric{
		"named like a dimension": {{Name: lambdaapi.DimensionEnvironment, Value: 1}},
		"empty name":             {{Name: "", Value: 1}},
		"reserved _aws":          {{Name: "_aws", Value: 1}},
		"duplicate":              {{Name: "a"}, {Name: "a"}},
		"too many":               many,
	} {
		var buf bytes.Buffer
		err := ForEnvironment(&buf, "dev").Write(ms...)
		if !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: err = %v, want ErrInvalidRecord", name, err)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %q for an invalid record", name, buf.String())
		}
	}
	var buf bytes.Buffer
	if err := ForEnvironment(&buf, "dev").Write(); err != nil || buf.Len() != 0 {
		t.Fatalf("empty record: err=%v, wrote %q", err, buf.String())
	}
}

func TestConcurrentWritesNeverInterleave(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := ForEnvironment(&buf, "dev")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = w.Write(Metric{Name: "N", Unit: UnitCount, Value: float64(i)})
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("got %d lines, want 50", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("interleaved or invalid line: %q", l)
		}
	}
}
