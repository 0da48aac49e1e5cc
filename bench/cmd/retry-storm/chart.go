package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Chart draws gateway calls per second over time, one line per strategy,
// with the outage and the recovery shaded; the legend sits top right, over
// the calm after the storm. The format follows the extension (.svg, .png).
func Chart(path string, sc Scenario, rs []Result, seed uint64) error {
	p := plot.New()
	p.Legend.Top = true
	p.Title.Text = fmt.Sprintf("Retry storm: gateway calls per second (seed %d)", seed)
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "gateway calls per second"
	colors := []color.RGBA{{R: 200, G: 40, B: 40, A: 255}, {R: 230, G: 150, B: 20, A: 255}, {R: 30, G: 110, B: 200, A: 255}, {R: 40, G: 150, B: 60, A: 255}}
	maxX := 0
	for _, r := range rs {
		maxX = max(maxX, len(r.CallsPerSecond))
	}
	maxX = min(maxX, 400)
	// The outage and the recovery ramp as shaded bands.
	for _, band := range []struct {
		from, to float64
		c        color.RGBA
		name     string
	}{
		{sc.OutageAt.Seconds(), sc.RecoverAt.Seconds(), color.RGBA{R: 225, G: 225, B: 225, A: 255}, "outage"},
		{sc.RecoverAt.Seconds(), (sc.RecoverAt + sc.RampFor).Seconds(), color.RGBA{R: 215, G: 240, B: 215, A: 255}, "recovery (capacity ramping back)"},
	} {
		poly, err := plotter.NewPolygon(plotter.XYs{{X: band.from, Y: 0}, {X: band.to, Y: 0}, {X: band.to, Y: 1e9}, {X: band.from, Y: 1e9}})
		if err != nil {
			return err
		}
		poly.Color = band.c
		poly.LineStyle.Width = 0
		p.Add(poly)
		p.Legend.Add(band.name, poly)
	}
	peak := 0
	for i, r := range rs {
		pts := make(plotter.XYs, maxX)
		for s := range pts {
			pts[s] = plotter.XY{X: float64(s)}
			if s < len(r.CallsPerSecond) {
				pts[s].Y = float64(r.CallsPerSecond[s])
				peak = max(peak, r.CallsPerSecond[s])
			}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = colors[i%len(colors)]
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(r.Strategy.Name, l)
	}
	p.X.Min, p.X.Max = 0, float64(maxX)
	p.Y.Min, p.Y.Max = 0, float64(peak)*1.1
	return p.Save(10*vg.Inch, 6*vg.Inch, path)
}
