package main

import (
	"bytes"
	"testing"
	"time"
)

// The Friday against the committed prod templates. On a normal Friday the
// alarms tell buffering from trouble: at the design's 600/h every queue
// holds about 1,200 at 20:00 and is empty by 22:00; an age alarm fires
// exactly where the oldest message outlives its threshold (the e-mail's
// and the starter's 30 min), and SLO 2 stays quiet at every capacity. A
// real shortfall, half the design's rate, fires every age alarm and SLO 2.
func TestAlarmsTellAFridayFromAShortfall(t *testing.T) {
	qs, burns, err := Read("../../../test/testdata/snapshots")
	if err != nil {
		t.Fatal(err)
	}
	runs := Play(qs)
	var out bytes.Buffer
	Print(&out, qs, burns, runs)
	t.Log("\n" + out.String())
	fired := 0
	for i, q := range qs {
		for _, rs := range runs {
			r := rs[i]
			if (r.AgeAlarm >= 0) != (r.Oldest > q.Threshold) {
				t.Errorf("%s at %s: oldest %s against %s, age alarm at %s", q.Name, r.Capacity, r.Oldest, q.Threshold, clock(r.AgeAlarm))
			}
			if r.AgeAlarm >= 0 {
				fired++
			}
			switch r.Capacity {
			case "as deployed":
				if r.Drained > Rush || r.AgeAlarm >= 0 {
					t.Errorf("%s as deployed (%.0f/h): drained at %s, age alarm at %s; want empty by the rush's end and quiet", q.Name, r.PerHour, clock(r.Drained), clock(r.AgeAlarm))
				}
			case "design 600/h":
				if at20 := r.Depth[Rush/time.Minute-1]; at20 < 1100 || at20 > 1300 || r.Drained < 0 || r.Drained > 6*time.Hour {
					t.Errorf("%s at 600/h: %.0f queued at 20:00, drained at %s; the design has ~1,200 and empty by 22:00", q.Name, at20, clock(r.Drained))
				}
			}
		}
	}
	if fired == 0 {
		t.Error("no age alarm fired on a normal Friday: the 30 min queues should have")
	}
	for _, rs := range runs {
		if at, b := SLO(rs, burns); at >= 0 {
			t.Errorf("SLO 2 fires at %s (%+v) at %s: every queue drains within 180 min", clock(at), b, rs[0].Capacity)
		}
	}
	var short []Run
	for _, q := range qs {
		r := Simulate(q, Run{Capacity: "shortfall", PerHour: DesignPerHour / 2})
		if r.AgeAlarm < 0 {
			t.Errorf("%s at 300/h: oldest %s, age alarm quiet", q.Name, r.Oldest)
		}
		short = append(short, r)
	}
	if at, _ := SLO(short, burns); at < 0 {
		t.Error("SLO 2 quiet at 300/h: messages wait over 180 min from about 20:30")
	}
}
