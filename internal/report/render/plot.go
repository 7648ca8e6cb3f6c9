package render

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"git.sr.ht/~sbinet/gg"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
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
	fig     *drawing
	panels  *panelFigure // KindPanels figures instead of fig
}

// PNG draws the figure as a PNG image of 600 x 360 pixels (panel figures
// with more than one row of panels are taller).
func (r Rendered) PNG() ([]byte, error) {
	img, release := r.raster()
	defer release()
	var b bytes.Buffer
	if err := encodePNG(&b, img); err != nil {
		return nil, fmt.Errorf("draw figure %s as png: %w", r.FileStem(), err)
	}
	return b.Bytes(), nil
}

// rasters keeps images for reuse, one pool per size (panel figures
// with several rows of panels are taller).
var rasters sync.Map // image.Point -> *sync.Pool of *image.RGBA

// raster draws the figure at pngDPI on a white image, one from rasters
// when there is one; release gives the image back once encoded.
func (r Rendered) raster() (img *image.RGBA, release func()) {
	size := image.Pt(int(figWidth.Dots(pngDPI)+0.5), int(r.height().Dots(pngDPI)+0.5))
	p, _ := rasters.LoadOrStore(size, &sync.Pool{New: func() any { return image.NewRGBA(image.Rectangle{Max: size}) }})
	pool := p.(*sync.Pool)
	img = pool.Get().(*image.RGBA)
	// The canvas as vgimg.NewWith makes it, on img itself: NewWith alone
	// would copy the image it was given, or the one it made, once more.
	ctx := gg.NewContextForRGBA(img)
	ctx.SetLineCapButt()
	ctx.InvertY()
	c := vgimg.NewWith(vgimg.UseImageWithContext(img, ctx), vgimg.UseDPI(pngDPI)) // fills img white
	r.drawOn(draw.New(newTextCanvas(c, img)))
	return img, func() { pool.Put(img) }
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
		fig, err := buildFigure(c, logx)
		if err != nil {
			return nil, fmt.Errorf("draw figure %s: %w", c.ID, err)
		}
		r := Rendered{Chart: c, fig: fig}
		if i > 0 {
			r.Variant = "linx"
			if logx {
				r.Variant = "logx"
			}
		}
		svg := &measuredSVG{Canvas: vgsvg.New(figWidth, figHeight)}
		fig.drawOn(draw.New(svg), true)
		var b bytes.Buffer
		if _, err := svg.WriteTo(&b); err != nil {
			return nil, fmt.Errorf("draw figure %s as svg: %w", c.ID, err)
		}
		fixed, err := svg.fixText(b.Bytes())
		if err != nil {
			return nil, fmt.Errorf("draw figure %s as svg: %w", c.ID, err)
		}
		r.SVG = compactSVG(fixed)
		out = append(out, r)
	}
	return out, nil
}

// Layout of a figure around the plot drawn by gonum/plot.
const (
	// figPad keeps every text off the figure's edges.
	figPad = vg.Length(6)
	// legendGap separates the legend from the x axis label above it.
	legendGap = vg.Length(4)
	// swatchWidth and swatchGap: a legend entry's colour sample and the
	// space between it and its name; entryGap is between entries.
	swatchWidth = vg.Length(18)
	swatchGap   = vg.Length(4)
	entryGap    = vg.Length(14)
)

// drawing is a figure: the plot and, below it, outside the data area,
// its legend.
type drawing struct {
	p *plot.Plot
	// title is drawn above the plot, one text per line, lines spaced so
	// their boxes stay apart (gonum/plot spaces lines one em apart).
	title      []string
	titleStyle draw.TextStyle
	legend     []legendEntry
	// legendStyle is the legend's text style.
	legendStyle draw.TextStyle
}

// legendEntry is a series' name and what draws its colour sample.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// drawOn lays out the figure on c: a margin all round, the legend at the
// bottom, the plot above it. With background it first fills c white; a
// canvas that is white already is not filled again (on an image,
// rasterising the fill costs as much as a third of the drawing).
func (d *drawing) drawOn(c draw.Canvas, background bool) {
	if background {
		c.SetColor(color.White)
		c.Fill(c.Rectangle.Path())
	}
	c = draw.Crop(c, figPad, -figPad, figPad, -figPad)
	titleH := d.titleStyle.Font.Size * 1.3
	for i, l := range d.title {
		c.FillText(d.titleStyle, vg.Point{X: c.Center().X, Y: c.Max.Y - titleH*vg.Length(i)}, l)
	}
	if len(d.title) > 0 {
		c = draw.Crop(c, 0, 0, 0, -(titleH*vg.Length(len(d.title)) + vg.Points(4)))
	}
	rows := d.legendRows(c.Max.X - c.Min.X)
	lineH := d.legendStyle.Font.Size * 1.4
	if len(rows) > 0 {
		h := lineH * vg.Length(len(rows))
		d.drawLegend(draw.Crop(c, 0, 0, 0, -(c.Max.Y-c.Min.Y-h)), rows, lineH)
		c = draw.Crop(c, 0, 0, h+legendGap, 0)
	}
	d.p.Draw(c)
}

// legendRows flows the legend's entries into rows no wider than width.
func (d *drawing) legendRows(width vg.Length) [][]legendEntry {
	var rows [][]legendEntry
	var used vg.Length
	for _, e := range d.legend {
		w := d.entryWidth(e)
		if len(rows) == 0 || used+entryGap+w > width {
			rows = append(rows, nil)
			used = w
		} else {
			used += entryGap + w
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], e)
	}
	return rows
}

func (d *drawing) entryWidth(e legendEntry) vg.Length {
	return swatchWidth + swatchGap + d.legendStyle.Width(e.name)
}

// drawLegend draws the rows of entries centred in c, top row first.
func (d *drawing) drawLegend(c draw.Canvas, rows [][]legendEntry, lineH vg.Length) {
	sty := d.legendStyle
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	swatchH := sty.Font.Size * 0.7
	for i, row := range rows {
		var w vg.Length
		for j, e := range row {
			if j > 0 {
				w += entryGap
			}
			w += d.entryWidth(e)
		}
		x := c.Center().X - w/2
		y := c.Max.Y - lineH*(vg.Length(i)+0.5)
		for _, e := range row {
			sw := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: y - swatchH/2},
				Max: vg.Point{X: x + swatchWidth, Y: y + swatchH/2},
			}}
			for _, t := range e.thumbs {
				t.Thumbnail(&sw)
			}
			c.FillText(sty, vg.Point{X: x + swatchWidth + swatchGap, Y: y}, e.name)
			x += d.entryWidth(e) + entryGap
		}
	}
}

// measuredSVG is an SVG canvas that remembers the width gonum/plot laid
// out each text at, in drawing order.
type measuredSVG struct {
	*vgsvg.Canvas
	widths []vg.Length
}

// FillString draws a non-empty str and records its width.
func (c *measuredSVG) FillString(f font.Face, pt vg.Point, str string) {
	if str == "" {
		return
	}
	c.widths = append(c.widths, f.Width(str))
	c.Canvas.FillString(f, pt, str)
}

// svgFonts are the fonts of a figure's texts: Liberation Serif, which
// the figures are laid out in, fonts with its metrics, then the generic
// family. Set once per figure in a style element, not on every text.
const svgFonts = `<style>text{font-family:'Liberation Serif',Tinos,'Times New Roman',Times,serif}</style>`

// svgTextFont is the font part of the style gonum/plot gives each text.
const svgTextFont = "font-family:Liberation Serif;font-variant:normal;font-weight:normal;font-style:normal;"

// fixText makes the SVG's texts keep the widths the layout gave them in
// any browser: each text element gets its width as textLength, so a
// reader without Liberation Serif, whose browser substitutes a wider or
// narrower font, sees no text run past the figure's edge or into
// another; and the font is named once, with metric-compatible fallbacks.
func (c *measuredSVG) fixText(svg []byte) ([]byte, error) {
	const open = "<text "
	if n := bytes.Count(svg, []byte(open)); n != len(c.widths) {
		return nil, fmt.Errorf("svg has %d text elements, %d drawn", n, len(c.widths))
	}
	start := bytes.Index(svg, []byte("<svg"))
	end := bytes.IndexByte(svg[max(start, 0):], '>')
	if start < 0 || end < 0 {
		return nil, fmt.Errorf("no svg element")
	}
	end += start + 1
	var b bytes.Buffer
	b.Grow(len(svg) + len(svgFonts) + len(c.widths)*48)
	b.Write(svg[:end])
	b.WriteString("\n" + svgFonts)
	rest := svg[end:]
	for _, w := range c.widths {
		i := bytes.Index(rest, []byte(open))
		b.Write(rest[:i+len(open)])
		fmt.Fprintf(&b, `textLength="%.5g" lengthAdjust="spacingAndGlyphs" `, w.Points())
		rest = rest[i+len(open):]
	}
	b.Write(rest)
	return bytes.ReplaceAll(b.Bytes(), []byte(svgTextFont), nil), nil
}

// wrapText breaks s at spaces into lines no wider than width.
func wrapText(sty draw.TextStyle, s string, width vg.Length) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case sty.Width(line+" "+w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}

func buildFigure(c Chart, logx bool) (*drawing, error) {
	p := plot.New()
	p.BackgroundColor = nil // drawing.draw fills the whole figure
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	// Keep the axis labels clear of the tick labels' boxes, which a
	// browser makes taller than gonum/plot's metrics.
	p.X.Label.Padding = vg.Points(5)
	p.Y.Label.Padding = vg.Points(5)
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks{plot.DefaultTicks{}}
	p.Add(plotter.NewGrid())
	d := &drawing{p: p, titleStyle: p.Title.TextStyle, legendStyle: p.Legend.TextStyle}
	d.titleStyle.Font.Size = vg.Points(11)
	d.titleStyle.XAlign, d.titleStyle.YAlign = draw.XCenter, draw.YTop
	d.title = wrapText(d.titleStyle, c.Title, figWidth-2*figPad)
	d.legendStyle.Font.Size = vg.Points(9)
	var err error
	switch c.Kind {
	case KindLines:
		err = addLines(d, c, logx)
	case KindBars:
		err = addBars(d, c)
	default:
		err = fmt.Errorf("unknown chart kind %q", c.Kind)
	}
	if err != nil {
		return nil, err
	}
	if c.Kind == KindLines && c.XMax > 0 && !logx {
		// The x axis of the figures it is compared with: the same ticks.
		p.X.Min, p.X.Max = 0, c.XMax
	}
	if c.Kind == KindLines && (c.Section == SectionRTT || c.Section == SectionLatencyLoad) {
		p.Y.Max = 1
	} else if top := max(dataTop(c), c.YMax); top > 0 {
		// A little room above the highest point (or the highest point of
		// the figures this one is compared with).
		p.Y.Max = top * 1.05
	}
	return d, nil
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

func addLines(d *drawing, c Chart, logx bool) error {
	p := d.p
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
			ticks := valueTicks(p.X.Tick.Label, slices.Sorted(maps.Keys(xs)))
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
		d.legend = append(d.legend, legendEntry{name: s.Name, thumbs: []plot.Thumbnailer{l}})
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
				eb.YErrors[i].Low, eb.YErrors[i].High = errBelow(xys[i].Y, e), e
			}
			p.Add(pts, eb)
		}
	}
	return nil
}

// valueTicks puts a tick at each of the sorted values xs of a log x axis
// that spans them (with 1.3x room each side), labelling a value only when
// its label keeps clear of the previous label: values close together (a
// few RTT quantiles) would otherwise write their labels over each other.
func valueTicks(sty draw.TextStyle, xs []float64) plot.ConstantTicks {
	lo, hi := math.Log(xs[0]/1.3), math.Log(xs[len(xs)-1]*1.3)
	// The data area's width: the figure less its margins and the y axis.
	avail := (figWidth - 2*figPad - 60).Points()
	lastEnd := math.Inf(-1)
	var ticks plot.ConstantTicks
	for _, x := range xs {
		label := tickLabel(x)
		pos := (math.Log(x) - lo) / (hi - lo) * avail
		w := sty.Width(label).Points()
		if pos-w/2 < lastEnd+4 {
			label = "" // an unlabelled tick
		} else {
			lastEnd = pos + w/2
		}
		ticks = append(ticks, plot.Tick{Value: x, Label: label})
	}
	return ticks
}

// tickLabel writes a tick's value: whole numbers as they are, others to
// three significant digits.
func tickLabel(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e9 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// errBelow is how far an error bar reaches below y: the interval's
// half-width e, but not below zero for a figure that cannot be negative
// (every figure drawn is a rate, a time, a share or CPU): a wide interval
// of few repetitions would otherwise draw negative CPU or throughput.
func errBelow(y, e float64) float64 {
	if y >= 0 {
		return math.Min(e, y)
	}
	return e
}

func addBars(d *drawing, c Chart) error {
	p := d.p
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
		d.legend = append(d.legend, legendEntry{name: s.Name, thumbs: []plot.Thumbnailer{b}})
		if len(s.YErr) == len(s.Y) {
			xys := make(plotter.XYs, len(s.Y))
			eb := &plotter.YErrorBars{YErrors: make(plotter.YErrors, len(s.Y)), CapWidth: vg.Points(4)}
			for i := range s.Y {
				xys[i] = plotter.XY{X: b.XMin + float64(i), Y: s.Y[i]}
				eb.YErrors[i].Low, eb.YErrors[i].High = errBelow(s.Y[i], s.YErr[i]), s.YErr[i]
			}
			eb.XYs = xys
			eb.LineStyle = draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
			p.Add(eb)
		}
	}
	p.NominalX(c.Categories...)
	p.X.Min, p.X.Max = -0.6, n-0.4
	fitCategories(p, c.Categories)
	return nil
}

// fitCategories keeps the bars' category labels from running into one
// another: a smaller font first, then every other label two lines lower.
func fitCategories(p *plot.Plot, cats []string) {
	if len(cats) < 2 {
		return
	}
	// The data area is about 85% of the figure's width; a label may take
	// most of its category's share.
	slot := (figWidth - 2*figPad) * 0.85 / vg.Length(len(cats)) * 0.9
	widest := func() vg.Length {
		var w vg.Length
		for _, c := range cats {
			w = max(w, p.X.Tick.Label.Width(c))
		}
		return w
	}
	if widest() <= slot {
		return
	}
	p.X.Tick.Label.Font.Size = vg.Points(8)
	if widest() <= slot {
		return
	}
	ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)
	for i := range ticks {
		if i%2 == 1 && ticks[i].Label != "" {
			// Two line breaks: one would leave the labels' boxes
			// touching (gonum/plot spaces lines one em apart).
			ticks[i].Label = "\n\n" + ticks[i].Label
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
}
