package report

import (
	"bytes"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure size, for both SVG and PNG.
const (
	figWidth  = 6 * vg.Inch
	figHeight = 3.6 * vg.Inch
	// pngDPI gives PNG files of 600 x 360 pixels, enough for half a slide;
	// the SVG files scale to any size. Rasterising and encoding PNGs is most
	// of a report's time, so this is not higher.
	pngDPI = 100
)

// palette is colour-blind safe (Okabe-Ito), in series order.
var palette = []color.RGBA{
	{0x00, 0x72, 0xb2, 0xff}, // blue
	{0xe6, 0x9f, 0x00, 0xff}, // orange
	{0x00, 0x9e, 0x73, 0xff}, // green
	{0xcc, 0x79, 0xa7, 0xff}, // purple
	{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	{0xf0, 0xe4, 0x42, 0xff}, // yellow
	{0x00, 0x00, 0x00, 0xff}, // black
}

var meanColor = color.RGBA{0xd6, 0x27, 0x28, 0xff} // red, like the seed's mean line

func seriesColor(i int) color.Color {
	if i == ColorMean {
		return meanColor
	}
	if i < 0 {
		i = -i
	}
	return palette[i%len(palette)]
}

// Rendered is one chart drawn as SVG; PNG rasterises it on demand (only
// the figure files need it, and it is the costly part).
type Rendered struct {
	Chart
	// Variant is "" for the chart as specified, "logx" or "linx" for its
	// copy with the other x scale.
	Variant string
	SVG     []byte
	plot    *plot.Plot
	panels  *panelFigure // KindPanels figures instead of plot
}

// PNG draws the figure as a PNG image of 600 x 360 pixels (panel figures
// with more than one row of panels are taller).
func (r Rendered) PNG() ([]byte, error) {
	img, release := pngCanvas(r.height())
	defer release()
	r.drawOn(draw.New(img))
	var b bytes.Buffer
	// Fastest compression, no filtering (see encodePNG): the figure files
	// are for download, and encoding would otherwise be most of a
	// report's time.
	if err := encodePNG(&b, img.Image()); err != nil {
		return nil, fmt.Errorf("draw figure %s as png: %w", r.FileStem(), err)
	}
	return b.Bytes(), nil
}

// FileStem is the file name of the figure without extension.
func (r Rendered) FileStem() string {
	if r.Variant == "" {
		return r.ID
	}
	return r.ID + "-" + r.Variant
}

// Render draws c as SVG; a chart with AltScale gives two
// Rendered, the one as specified first.
func Render(c Chart) ([]Rendered, error) {
	if c.Kind == KindPanels {
		return renderPanels(c)
	}
	variants := []bool{c.LogX}
	if c.AltScale {
		variants = append(variants, !c.LogX)
	}
	var out []Rendered
	for i, logx := range variants {
		p, err := buildPlot(c, logx)
		if err != nil {
			return nil, fmt.Errorf("draw figure %s: %w", c.ID, err)
		}
		r := Rendered{Chart: c, plot: p}
		if i > 0 {
			r.Variant = "linx"
			if logx {
				r.Variant = "logx"
			}
		}
		svg := vgsvg.New(figWidth, figHeight)
		p.Draw(draw.New(svg))
		var b bytes.Buffer
		if _, err := svg.WriteTo(&b); err != nil {
			return nil, fmt.Errorf("draw figure %s as svg: %w", c.ID, err)
		}
		r.SVG = compactSVG(b.Bytes())
		out = append(out, r)
	}
	return out, nil
}

func buildPlot(c Chart, logx bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.Title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{plot.DefaultTicks{}}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	p.Add(plotter.NewGrid())
	var err error
	switch c.Kind {
	case KindLines:
		err = addLines(p, c, logx)
	case KindBars:
		err = addBars(p, c)
	default:
		err = fmt.Errorf("unknown chart kind %q", c.Kind)
	}
	if err != nil {
		return nil, err
	}
	if c.Kind == KindLines && (c.Section == SectionRTT || c.Section == SectionLatencyLoad) {
		p.Y.Max = 1
		p.Legend.Left = false
		p.Legend.Top = false
		p.Legend.YOffs = vg.Points(20)
	} else if top := dataTop(c); top > 0 {
		// Leave room above the data for the legend, one line per entry.
		p.Y.Max = top * (1.08 + 0.075*float64(len(c.Series)))
	}
	return p, nil
}

// plainTicks labels ticks with as few digits as they need ("25", not
// "25.00").
type plainTicks struct{ plot.Ticker }

func (t plainTicks) Ticks(min, max float64) []plot.Tick {
	ts := t.Ticker.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = plainNumber(ts[i].Value)
		}
	}
	return ts
}

// plainNumber writes v with the digits it needs, after rounding away the
// binary noise of tick arithmetic (1.2000000000000002 is "1.2").
func plainNumber(v float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		r = v
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// dataTop is the highest point a chart draws: stacked bars summed, error
// bars included.
func dataTop(c Chart) float64 {
	var top float64
	stacks := map[string][]float64{}
	for _, s := range c.Series {
		for i, y := range s.Y {
			if i < len(s.YErr) {
				y += s.YErr[i]
			}
			if c.Kind == KindBars {
				st := stacks[s.Stack]
				if st == nil {
					st = make([]float64, len(s.Y))
					stacks[s.Stack] = st
				}
				st[i] += s.Y[i]
				y = max(y, st[i])
			}
			top = max(top, y)
		}
	}
	return top
}

func addLines(p *plot.Plot, c Chart, logx bool) error {
	minX := math.Inf(1)
	for _, s := range c.Series {
		for _, x := range s.X {
			if x > 0 {
				minX = math.Min(minX, x)
			}
		}
	}
	if logx {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		// A few distinct x values (stream counts) get a tick each: log
		// ticks would label only the powers of ten.
		xs := map[float64]bool{}
		for _, s := range c.Series {
			for _, x := range s.X {
				xs[x] = true
			}
		}
		if len(xs) <= 12 {
			var ticks plot.ConstantTicks
			for _, x := range slices.Sorted(maps.Keys(xs)) {
				ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
			}
			p.X.Tick.Marker = ticks
			// Keep the end points and their error bars off the frame.
			p.X.Min, p.X.Max = ticks[0].Value/1.3, ticks[len(ticks)-1].Value*1.3
		}
	}
	for _, s := range c.Series {
		xys := make(plotter.XYs, 0, len(s.X))
		for i := range s.X {
			x := s.X[i]
			if logx && x <= 0 {
				x = minX // a log axis cannot show 0
			}
			xys = append(xys, plotter.XY{X: x, Y: s.Y[i]})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Name, err)
		}
		l.Color = seriesColor(s.Color)
		l.Width = vg.Points(1.5)
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			l.Width = vg.Points(2)
		}
		p.Add(l)
		p.Legend.Add(s.Name, l)
		if len(s.YErr) == len(s.X) && len(s.X) > 0 {
			pts, err := plotter.NewScatter(xys)
			if err != nil {
				return fmt.Errorf("series %s: %w", s.Name, err)
			}
			pts.Color = l.Color
			pts.Shape = draw.CircleGlyph{}
			eb := &plotter.YErrorBars{XYs: xys, YErrors: make(plotter.YErrors, len(xys)), CapWidth: vg.Points(5)}
			eb.LineStyle = draw.LineStyle{Color: l.Color, Width: vg.Points(1)}
			for i, e := range s.YErr {
				eb.YErrors[i].Low, eb.YErrors[i].High = e, e
			}
			p.Add(pts, eb)
		}
	}
	return nil
}

func addBars(p *plot.Plot, c Chart) error {
	var stacks []string
	for _, s := range c.Series {
		if !slices.Contains(stacks, s.Stack) {
			stacks = append(stacks, s.Stack)
		}
	}
	n := float64(len(c.Categories))
	k := float64(len(stacks))
	// Bars of one category share 80% of the space between categories; the
	// plot area is about 85% of the figure width.
	slot := 0.8 / k
	width := vg.Length(float64(figWidth) * 0.85 / n * slot * 0.95)
	below := map[string]*plotter.BarChart{}
	for _, s := range c.Series {
		si := float64(slices.Index(stacks, s.Stack))
		b, err := plotter.NewBarChart(plotter.Values(s.Y), width)
		if err != nil {
			return fmt.Errorf("series %s: %w", s.Name, err)
		}
		b.XMin = -0.4 + slot*(si+0.5)
		b.Color = seriesColor(s.Color)
		b.LineStyle.Width = vg.Points(0.5)
		if prev := below[s.Stack]; prev != nil {
			b.StackOn(prev)
		}
		below[s.Stack] = b
		p.Add(b)
		p.Legend.Add(s.Name, b)
		if len(s.YErr) == len(s.Y) {
			xys := make(plotter.XYs, len(s.Y))
			eb := &plotter.YErrorBars{YErrors: make(plotter.YErrors, len(s.Y)), CapWidth: vg.Points(4)}
			for i := range s.Y {
				xys[i] = plotter.XY{X: b.XMin + float64(i), Y: s.Y[i]}
				eb.YErrors[i].Low, eb.YErrors[i].High = s.YErr[i], s.YErr[i]
			}
			eb.XYs = xys
			eb.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
			p.Add(eb)
		}
	}
	p.NominalX(c.Categories...)
	p.X.Min, p.X.Max = -0.6, n-0.4
	p.Legend.Left = false
	return nil
}
