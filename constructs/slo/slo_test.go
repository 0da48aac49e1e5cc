package slo_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/mercadofresco/integration/constructs/core"
	"github.com/mercadofresco/integration/constructs/observability"
	"github.com/mercadofresco/integration/constructs/slo"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

func metric(name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("MercadoFresco/Tienda"), MetricName: jsii.String(name)})
}

// One alarm per window, on (bad / total) / budget summed over the window,
// above the workbook's rate, to the alerts topic (ALARM and OK); and the
// objective's graph on the dashboard.
func TestBurnRateAlarmsPerWindow(t *testing.T) {
	p := cdktest.NewPlatform("SLO")
	board := &observability.Board{}
	o := slo.New(p.Stack, "Objetivo", &slo.Props{
		Context:     core.Context{Alerts: p.Alerts, EnvironmentName: "dev", Dashboard: board},
		Name:        "SLO test",
		Description: "What to do.",
		Objective:   0.999,
		Bad:         []awscloudwatch.Metric{metric("Tarde"), metric("Caducado")},
		Total:       []awscloudwatch.Metric{metric("Todos")},
	})
	if errs := cdktest.Errors(p.Stack); len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(o.Alarms) != 2 || len(board.Widgets(observability.SLOs)) != 1 {
		t.Fatalf("%d alarms, %d SLO widgets; want 2 and 1", len(o.Alarms), len(board.Widgets(observability.SLOs)))
	}
	tpl := assertions.Template_FromStack(p.Stack, nil)
	alarms := tpl.FindResources(jsii.String("AWS::CloudWatch::Alarm"), nil)
	got := map[float64]float64{} // threshold -> period of the metrics
	for _, a := range *alarms {
		props := (*a)["Properties"].(map[string]any)
		if len(props["AlarmActions"].([]any)) != 1 || len(props["OKActions"].([]any)) != 1 || props["TreatMissingData"] != "notBreaching" {
			t.Errorf("alarm actions or missing data: %v", props)
		}
		raw, _ := json.Marshal(props["Metrics"])
		if !regexp.MustCompile(`\(FILL\(malos(\d+)_0, 0\) \+ FILL\(malos(\d+)_1, 0\)\) / \(FILL\(total(\d+)_0, 0\)\) / 0.001`).Match(raw) || !strings.Contains(string(raw), `"Stat":"Sum"`) {
			t.Errorf("burn rate expression: %s", raw)
		}
		for _, m := range props["Metrics"].([]any) {
			if ms, ok := m.(map[string]any)["MetricStat"].(map[string]any); ok {
				got[props["Threshold"].(float64)] = ms["Period"].(float64)
			}
		}
	}
	if got[14.4] != 3600 || got[6] != 21600 || len(got) != 2 {
		t.Errorf("thresholds and windows %v, want 14.4 over 3600 s and 6 over 21600 s", got)
	}
}

func TestInvalidObjectiveIsReported(t *testing.T) {
	p := cdktest.NewPlatform("SLOBad")
	slo.New(p.Stack, "Objetivo", &slo.Props{Objective: 1})
	for _, want := range []string{"Alerts is required", "Name and Description are required", "Objective 1 must be between 0 and 1", "Bad and Total are required"} {
		cdktest.RequireContains(t, cdktest.Errors(p.Stack), want)
	}
}
