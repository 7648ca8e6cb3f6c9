package render

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gonum.org/v1/plot"
)

// axisTicks are an axis's range and the values of its labelled ticks.
func axisTicks(a plot.Axis) string {
	var vs []float64
	for _, t := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if t.Label != "" {
			vs = append(vs, t.Value)
		}
	}
	return fmt.Sprintf("%g..%g %v", a.Min, a.Max, vs)
}

// TestSiblingFiguresShareTicks: the figures of a group meant to be
// compared side by side (each method's throughput over time in one
// condition, and the panels of all of them) have the same x and y axes
// with the same ticks, on the fixture's real runs.
func TestSiblingFiguresShareTicks(t *testing.T) {
	groups := 0
	for _, rr := range fixtureDB(t) {
		axes := map[string]map[string]string{} // group -> "x"/"y" -> ticks
		for _, c := range Charts(rr.Run, rr.Cells) {
			if c.ShareY == "" {
				continue
			}
			var x, y string
			switch c.Kind {
			case KindLines:
				d, err := buildFigure(c, false)
				if err != nil {
					t.Fatal(err)
				}
				x, y = axisTicks(d.p.X), axisTicks(d.p.Y)
			case KindPanels:
				pf, err := buildPanels(c)
				if err != nil {
					t.Fatal(err)
				}
				// The first panel of the last row labels both its axes.
				p := pf.plots[len(pf.plots)-1][0]
				x, y = axisTicks(p.X), axisTicks(p.Y)
			default:
				continue
			}
			if axes[c.ShareY] == nil {
				axes[c.ShareY] = map[string]string{"x": x, "y": y, "first": c.ID}
				groups++
				continue
			}
			want := axes[c.ShareY]
			if diff := cmp.Diff(want["x"]+" | "+want["y"], x+" | "+y); diff != "" {
				t.Errorf("%s and %s share axes but not their ticks (-first +this):\n%s", want["first"], c.ID, diff)
			}
		}
	}
	if groups == 0 {
		t.Fatal("no group of figures sharing axes in the fixture's runs")
	}
}
