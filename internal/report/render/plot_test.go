package render

import (
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/summary"
	"gonum.org/v1/plot"
)

// TestSharedYAxis: the per-method throughput-over-time figures of one
// condition, laid side by side in the report, are drawn with one y axis
// reaching the highest point of any of them, though their data differ.
func TestSharedYAxis(t *testing.T) {
	differ := false
	for _, rr := range fixtureDB(t) {
		groups := map[string][]Chart{}
		for _, c := range Charts(rr.Run, rr.Cells) {
			if c.Section == SectionThroughputTime {
				if c.ShareY == "" {
					t.Errorf("throughput-over-time figure %s shares its y axis with no group", c.ID)
				}
				groups[c.ShareY] = append(groups[c.ShareY], c)
			}
		}
		for g, cs := range groups {
			var top float64
			for _, c := range cs {
				top = max(top, dataTop(c))
			}
			var axis float64
			for i, c := range cs {
				if c.YMax != summary.Round6(top) {
					t.Errorf("group %s: figure %s has y max %g, the group's highest point is %g", g, c.ID, c.YMax, top)
				}
				if dataTop(c) < top*0.99 {
					differ = true
				}
				rs, err := Render(c)
				if err != nil {
					t.Fatal(err)
				}
				y := 0.0
				if pf := rs[0].panels; pf != nil {
					y = pf.plots[0][0].Y.Max
				} else {
					y = rs[0].fig.p.Y.Max
				}
				if i == 0 {
					axis = y
				} else if y != axis {
					t.Errorf("group %s: figure %s's y axis ends at %g, %s's at %g", g, c.ID, y, cs[0].ID, axis)
				}
			}
			if axis < top {
				t.Errorf("group %s: y axis ends at %g, below the highest point %g", g, axis, top)
			}
		}
	}
	if !differ {
		t.Error("no group with figures of different heights: the fixtures do not exercise the shared axis")
	}
}

// svgText is one text element of an SVG figure, where it stands on the
// page (y grows downwards) and the width it was laid out with.
type svgText struct {
	text         string
	x, y, length float64
}

var svgTextRE = regexp.MustCompile(`<text textLength="([^"]+)" lengthAdjust="spacingAndGlyphs" x="([^"]+)" y="([^"]+)" transform="scale\(1, -1\)"\s+style="([^"]*)">([^<]*)</text>`)

// svgTexts parses the text elements of a figure drawn by Render.
func svgTexts(t *testing.T, svg []byte) []svgText {
	t.Helper()
	var out []svgText
	for _, m := range svgTextRE.FindAllStringSubmatch(string(svg), -1) {
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("text %q: %v", m[0], err)
			}
			return v
		}
		if strings.Contains(m[4], "font-family") {
			t.Errorf("text %q names its own font (style %q), not the figure's with fallbacks", m[5], m[4])
		}
		// The figure's group flips y: the page's y is the height minus
		// the text's y after its own flip.
		out = append(out, svgText{text: html.UnescapeString(m[5]), length: num(m[1]), x: num(m[2]), y: figHeight.Points() + num(m[3])})
	}
	if !strings.Contains(string(svg), svgFonts) {
		t.Error("figure does not name its font with fallbacks")
	}
	if n := strings.Count(string(svg), "<text "); n != len(out) {
		t.Errorf("%d text elements, %d with their laid-out width", n, len(out))
	}
	return out
}

// TestLegendBelowThePlot: every legend entry's name is drawn below the x
// axis label, out of the data area; names are drawn right of their
// colour samples; and every text but the (rotated) y axis label keeps
// inside the figure with its laid-out width.
func TestLegendBelowThePlot(t *testing.T) {
	charts := stressCharts()
	for _, rr := range fixtureDB(t) {
		charts = append(charts, Charts(rr.Run, rr.Cells)...)
	}
	for _, c := range charts {
		if c.Kind == KindPanels {
			// One legend beside the panels, outside every data area
			// (TestSeedFigures; the browser test checks its texts).
			continue
		}
		rs, err := Render(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			texts := svgTexts(t, r.SVG)
			var label *svgText
			for i := range texts {
				tx := texts[i]
				if tx.text == c.YLabel {
					continue // drawn rotated: its x and y are not the page's
				}
				if tx.x < 0 || tx.x+tx.length > figWidth.Points() || tx.y < 0 || tx.y > figHeight.Points() {
					t.Errorf("%s: %q at (%g, %g), %g wide, runs outside the figure", r.FileStem(), tx.text, tx.x, tx.y, tx.length)
				}
				if tx.text == c.XLabel {
					label = &texts[i]
				}
			}
			if label == nil {
				t.Fatalf("%s: no x axis label %q", r.FileStem(), c.XLabel)
			}
			for _, s := range c.Series {
				n := 0
				for _, tx := range texts {
					if tx.text != s.Name {
						continue
					}
					n++
					if tx.y <= label.y {
						t.Errorf("%s: legend entry %q at y %g is not below the x axis label at y %g", r.FileStem(), s.Name, tx.y, label.y)
					}
					if tx.x < (figPad + swatchWidth + swatchGap).Points() {
						t.Errorf("%s: legend entry %q at x %g leaves no room for its colour sample", r.FileStem(), s.Name, tx.x)
					}
				}
				if n != 1 {
					t.Errorf("%s: legend entry %q drawn %d times", r.FileStem(), s.Name, n)
				}
			}
		}
	}
}

// TestValueTicks: every value gets a tick; close values leave some
// unlabelled rather than write over each other; spread values (stream
// counts, MSS) are all labelled, whole numbers as they are.
func TestValueTicks(t *testing.T) {
	sty := plot.New().X.Tick.Label
	close := valueTicks(sty, []float64{16.9633, 18.06, 18.2, 24.2333, 25.8, 27.5, 38.6333, 41.05})
	labelled := 0
	for _, tk := range close {
		if tk.Label != "" {
			labelled++
		}
	}
	if len(close) != 8 || labelled == 0 || labelled == 8 {
		t.Errorf("close values: %d ticks, %d labelled: %+v", len(close), labelled, close)
	}
	var got []string
	for _, tk := range valueTicks(sty, []float64{1, 4, 16, 64, 256}) {
		got = append(got, tk.Label)
	}
	if strings.Join(got, ",") != "1,4,16,64,256" {
		t.Errorf("stream counts labelled %q", got)
	}
}
