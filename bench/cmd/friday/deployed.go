package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mercadofresco/integration/config"
	"github.com/mercadofresco/integration/config/catalog"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/synthesized"
)

// Queue is one consumer queue as deployed: what its consumer processes an
// hour (How says from what), and its age alarm, Maximum above Threshold
// for Periods periods of Period.
type Queue struct {
	Name, How         string
	PerHour           float64
	Threshold, Period time.Duration
	Periods           int
}

// Burn is one burn-rate alarm of SLO 2.
type Burn struct {
	Window time.Duration
	Rate   float64
}

// Read reads every consumer queue of the catalogue and SLO 2's alarms from
// the prod templates in dir (the snapshots or a cloud assembly).
func Read(dir string) ([]Queue, []Burn, error) {
	app, err := synthesized.LoadEnv(dir, "prod")
	if err != nil {
		return nil, nil, err
	}
	alarms := app.Resources("AWS::CloudWatch::Alarm")
	var qs []Queue
	for _, cq := range catalog.Queues {
		name := catalog.PhysicalName(cq.Name, "prod")
		res := app.Find("", name)
		maps := app.From(res, synthesized.Mapping)
		if res == nil || len(maps) != 1 || maps[0].To == nil {
			return nil, nil, fmt.Errorf("%s: no queue %s read by one function", dir, name)
		}
		q, err := capacity(maps[0].Via, maps[0].To)
		if err != nil {
			return nil, nil, err
		}
		q.Name = name
		for _, a := range alarms {
			dims := listOf(a.Prop("Dimensions"))
			if a.Prop("MetricName") == "ApproximateAgeOfOldestMessage" && len(dims) == 1 && app.Find(a.Stack, synthesized.Dig(dims[0], "Value")) == res {
				q.Threshold = seconds(synthesized.Number(a.Prop("Threshold"), 0))
				q.Period = seconds(synthesized.Number(a.Prop("Period"), 300))
				q.Periods = int(synthesized.Number(a.Prop("EvaluationPeriods"), 1))
			}
		}
		if q.Threshold == 0 {
			return nil, nil, fmt.Errorf("%s: queue %s has no age alarm", dir, name)
		}
		qs = append(qs, q)
	}
	var burns []Burn
	for _, a := range alarms {
		for _, m := range listOf(a.Prop("Metrics")) {
			if synthesized.Dig(m, "MetricStat", "Metric", "MetricName") == lambdaapi.MetricMessagesLate {
				burns = append(burns, Burn{seconds(synthesized.Number(synthesized.Dig(m, "MetricStat", "Period"), 0)), synthesized.Number(a.Prop("Threshold"), 0)})
			}
		}
	}
	if len(burns) == 0 {
		return nil, nil, fmt.Errorf("%s: no alarm on %s (SLO 2)", dir, lambdaapi.MetricMessagesLate)
	}
	return qs, burns, nil
}

// capacity is the records an hour the mapping m gets through function fn:
// its ceiling of invocations, each a batch worked BATCH_CONCURRENCY at a
// time at the service time config states for its dependency, within the
// function's timeout.
func capacity(m, fn *synthesized.Resource) (Queue, error) {
	env, _ := synthesized.Dig(fn.Prop("Environment"), "Variables").(map[string]any)
	dep := "aws"
	for k := range env {
		if p, ok := strings.CutSuffix(k, lambdaapi.EnvSuffixReadTimeout); ok {
			dep = strings.ToLower(p)
		}
	}
	s, ok := config.ServiceTimes[dep]
	if !ok {
		return Queue{}, fmt.Errorf("config.ServiceTimes states no service time for %s (%s)", dep, fn.Prop("FunctionName"))
	}
	ceiling := synthesized.Number(synthesized.Dig(m.Prop("ScalingConfig"), "MaximumConcurrency"), synthesized.Number(fn.Prop("ReservedConcurrentExecutions"), 1000))
	batch := synthesized.Number(m.Prop("BatchSize"), 10)
	par := synthesized.Number(env[lambdaapi.EnvBatchConcurrency], 1)
	timeout := seconds(synthesized.Number(fn.Prop("Timeout"), 3))
	invocation := min(time.Duration(math.Ceil(batch/par))*s, timeout)
	done := min(batch, par*math.Floor(float64(timeout)/float64(s)))
	return Queue{PerHour: ceiling * done * float64(time.Hour) / float64(invocation),
		How: fmt.Sprintf("%s: %.0f × %.0f records, %.0f at a time, %s %s each, timeout %s", fn.Prop("FunctionName"), ceiling, batch, par, dep, s, timeout)}, nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func listOf(v any) []any { xs, _ := v.([]any); return xs }
