package sqsbatch_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mercadofresco/integration/lambdas/failure"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
	"github.com/mercadofresco/integration/lambdas/sqsbatch"
)

var now = time.Date(2027, 1, 20, 12, 0, 0, 0, time.UTC)

func record(body, mark string) *sqsbatch.Record {
	m := events.SQSMessage{MessageId: "m", Body: body}
	if mark != "" {
		m.MessageAttributes = map[string]events.SQSMessageAttribute{lambdaapi.AttrReadmision: {DataType: "String", StringValue: &mark}}
	}
	return &sqsbatch.Record{Message: m}
}

func TestCheck(t *testing.T) {
	w := sqsbatch.Window{Max: 45 * 24 * time.Hour, CreatedAt: "confirmado_en", Now: func() time.Time { return now }}
	at := func(ago time.Duration) string {
		return `{"confirmado_en":"` + now.Add(-ago).Format(time.RFC3339) + `"}`
	}
	day := 24 * time.Hour
	for _, tt := range []struct {
		name, body, mark string
		want             string // "" ok, "expired", "poison"
	}{
		{"inside", at(44 * day), "", ""},
		{"exactly the window", at(45 * day), "", ""},
		{"a second past it", at(45*day + time.Second), "", "expired"},
		{"created in the future", at(-time.Hour), "", ""},
		{"re-admitted an hour ago", at(60 * day), now.Add(-time.Hour).Format(time.RFC3339), ""},
		{"re-admission lapsed", at(60 * day), now.Add(-5 * day).Format(time.RFC3339), "expired"},
		{"re-admission from the future", at(60 * day), now.Add(time.Hour).Format(time.RFC3339), "expired"},
		{"re-admission not a time", at(60 * day), "yes", "expired"},
		{"no creation time", `{"pedido_id":"P"}`, "", "poison"},
		{"creation time not RFC 3339", `{"confirmado_en":"20/01/2027"}`, "", "poison"},
		{"creation time a number", `{"confirmado_en":1737374400}`, "", "poison"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := w.Check(record(tt.body, tt.mark))
			switch tt.want {
			case "":
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case "expired":
				var ee *sqsbatch.ExpiredError
				if !errors.Is(err, sqsbatch.ErrExpired) || !errors.As(err, &ee) || failure.KindOf(err) != failure.KindPermanent {
					t.Fatalf("err = %v, want a permanent ExpiredError", err)
				}
				if !strings.HasPrefix(ee.Error(), lambdaapi.ReasonExpiredWindow+":") || !strings.Contains(ee.Error(), "45 days") {
					t.Fatalf("reason %q", ee.Error())
				}
				if tt.mark != "" && !strings.Contains(ee.Error(), tt.mark) {
					t.Fatalf("the reason does not name the lapsed mark: %q", ee.Error())
				}
			case "poison":
				if failure.KindOf(err) != failure.KindPoison || errors.Is(err, sqsbatch.ErrExpired) {
					t.Fatalf("err = %v, want poison", err)
				}
			}
		})
	}
}

func TestCheckNestedPath(t *testing.T) {
	w := sqsbatch.Window{Max: 89 * 24 * time.Hour, CreatedAt: "detail.creado_en", Now: func() time.Time { return now }}
	old := `{"detail":{"creado_en":"` + now.Add(-90*24*time.Hour).Format(time.RFC3339Nano) + `"}}`
	if err := w.Check(record(old, "")); !errors.Is(err, sqsbatch.ErrExpired) {
		t.Fatalf("err = %v", err)
	}
	if err := w.Check(record(`{"detail":"x"}`, "")); failure.KindOf(err) != failure.KindPoison {
		t.Fatalf("err = %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		w  sqsbatch.Window
		ok bool
	}{
		{sqsbatch.Window{Max: 45 * 24 * time.Hour, CreatedAt: "confirmado_en"}, true},
		{sqsbatch.Window{CreatedAt: "confirmado_en"}, false},
		{sqsbatch.Window{Max: time.Hour, CreatedAt: "confirmado_en"}, false}, // shorter than a re-admission
		{sqsbatch.Window{Max: 45 * 24 * time.Hour}, false},
		{sqsbatch.Window{Max: 45 * 24 * time.Hour, CreatedAt: "detail..creado_en"}, false},
	} {
		if err := tt.w.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: err = %v", tt.w, err)
		}
	}
}

// A re-admission admits its message for less time than any window lasts,
// so a copy of a re-admitted message processed later still finds the
// record the first one wrote.
func TestReadmissionIsShorterThanEveryWindow(t *testing.T) {
	for _, w := range []time.Duration{lambdaapi.WindowPreparacion, lambdaapi.WindowCorreo, lambdaapi.WindowAvisoERP} {
		if lambdaapi.ReadmissionValidity >= w {
			t.Errorf("re-admission validity %s >= window %s", lambdaapi.ReadmissionValidity, w)
		}
	}
}

func TestDays(t *testing.T) {
	for d, want := range map[time.Duration]string{45 * 24 * time.Hour: "45 days", 87 * 12 * time.Hour: "43.5 days", 90 * time.Minute: "1h30m0s"} {
		if got := sqsbatch.Days(d); got != want {
			t.Errorf("Days(%s) = %q, want %q", d, got, want)
		}
	}
}
