package render

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Panel figures (KindPanels): one small plot per panel in a grid, all on
// the same x and y ranges, under one title, with one legend to the right
// of the panels.

// panelRowHeight is the height a figure grows by per row of panels beyond
// the first.
const panelRowHeight = 2.4 * vg.Inch

// panelFigure is a KindPanels chart ready to draw.
type panelFigure struct {
	title  string
	plots  [][]*plot.Plot // rows of columns; nil where the grid has no panel
	legend plot.Legend
	// legendNames are the legend's entries, to size it.
	legendNames []string
	height      vg.Length
}

// panelColumns is how many panels a row holds: up to three, two when
// there are four (a square).
func panelColumns(n int) int {
	switch {
	case n == 4:
		return 2
	case n > 3:
		return 3
	}
	return n
}

// renderPanels draws a KindPanels chart as SVG.
func renderPanels(c Chart) ([]Rendered, error) {
	pf, err := buildPanels(c)
	if err != nil {
		return nil, fmt.Errorf("draw figure %s: %w", c.ID, err)
	}
	svg := &measuredSVG{Canvas: vgsvg.New(figWidth, pf.height)}
	pf.draw(draw.New(svg), true)
	var b bytes.Buffer
	if _, err := svg.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("draw figure %s as svg: %w", c.ID, err)
	}
	fixed, err := svg.fixText(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("draw figure %s as svg: %w", c.ID, err)
	}
	return []Rendered{{Chart: c, SVG: compactSVG(fixed), panels: pf}}, nil
}

// height is the figure's height.
func (r Rendered) height() vg.Length {
	if r.panels != nil {
		return r.panels.height
	}
	return figHeight
}

// drawOn draws the figure on a raster canvas, which is white already
// (vgimg paints its background): the plot's own background is not
// painted again, which was a tenth of the rasterising.
func (r Rendered) drawOn(dc draw.Canvas) {
	if r.panels != nil {
		r.panels.draw(dc, false)
		return
	}
	r.fig.drawOn(dc, false)
}

func buildPanels(c Chart) (*panelFigure, error) {
	var names []string
	for _, s := range c.Series {
		if !slices.Contains(names, s.Panel) {
			names = append(names, s.Panel)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no panel")
	}
	cols := panelColumns(len(names))
	rows := (len(names) + cols - 1) / cols
	pf := &panelFigure{title: c.Title, height: figHeight + vg.Length(rows-1)*panelRowHeight}
	pf.legend = plot.NewLegend()
	pf.legend.TextStyle.Font.Size = vg.Points(8)
	pf.legend.Top, pf.legend.Left = true, true
	// Browsers lay text out taller than gonum's font metrics: air between
	// entries and between the axis titles and the tick labels keeps the
	// texts apart there too.
	pf.legend.Padding = vg.Points(3)
	// Every panel has the same ranges, so that they compare at a glance.
	top := max(dataTop(c), c.YMax) // the highest point of the figures it is compared with
	minX, maxX := 0.0, c.XMax      // the furthest x of the figures it is compared with
	for _, s := range c.Series {
		for _, x := range s.X {
			maxX = max(maxX, x)
		}
	}
	for i, name := range names {
		row, col := i/cols, i%cols
		if row == len(pf.plots) {
			pf.plots = append(pf.plots, make([]*plot.Plot, cols))
		}
		p := plot.New()
		p.Title.Text = name
		p.Title.TextStyle.Font.Size = vg.Points(10)
		p.X.Tick.Label.Font.Size = vg.Points(8)
		p.Y.Tick.Label.Font.Size = vg.Points(8)
		p.X.Label.TextStyle.Font.Size = vg.Points(9)
		p.X.Label.Padding = vg.Points(3)
		p.Y.Label.TextStyle.Font.Size = vg.Points(9)
		p.BackgroundColor = nil // the figure's, drawn once
		// Axis titles and tick labels once, as the axes are shared: y on
		// the first column, x under the last panel of each column.
		p.Y.Tick.Marker, p.X.Tick.Marker = unlabelled{plot.DefaultTicks{}}, unlabelled{plot.DefaultTicks{}}
		if col == 0 {
			p.Y.Label.Text = c.YLabel
			p.Y.Tick.Marker = plainTicks{plot.DefaultTicks{}}
		}
		if i+cols >= len(names) {
			p.X.Label.Text = c.XLabel
			p.X.Tick.Marker = plainTicks{plot.DefaultTicks{}}
		}
		p.Add(plotter.NewGrid())
		sub := Chart{ID: c.ID, Kind: KindLines}
		for _, s := range c.Series {
			if s.Panel == name {
				sub.Series = append(sub.Series, s)
			}
		}
		if err := addLines(&drawing{p: p}, sub, false); err != nil { // the panels share one legend, below
			return nil, err
		}
		p.Legend = plot.NewLegend() // one legend for all panels, drawn beside them
		p.X.Min, p.X.Max = minX, maxX
		p.Y.Min = 0
		if top > 0 {
			p.Y.Max = top * 1.05
		}
		pf.plots[row][col] = p
		for _, s := range sub.Series {
			if slices.Contains(pf.legendNames, s.Name) {
				continue
			}
			l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}})
			if err != nil {
				return nil, err
			}
			l.Color = seriesColor(s.Color)
			l.Width = vg.Points(1.5)
			if s.Dashed {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				l.Width = vg.Points(2)
			}
			pf.legend.Add(s.Name, l)
			pf.legendNames = append(pf.legendNames, s.Name)
		}
	}
	return pf, nil
}

// unlabelled are ticks without labels, for an axis another panel labels.
type unlabelled struct{ plot.Ticker }

func (t unlabelled) Ticks(min, max float64) []plot.Tick {
	ts := t.Ticker.Ticks(min, max)
	for i := range ts {
		ts[i].Label = ""
	}
	return ts
}

// titleLines breaks a title that is wider than w after the comma nearest
// its middle, so that it is never clipped.
func titleLines(sty draw.TextStyle, title string, w vg.Length) string {
	if sty.Width(title) <= w {
		return title
	}
	best := -1
	for i := range title {
		if strings.HasPrefix(title[i:], ", ") || title[i] == '(' {
			if best < 0 || abs(i-len(title)/2) < abs(best-len(title)/2) {
				best = i
			}
		}
	}
	if best < 0 {
		return title
	}
	if title[best] == '(' {
		return strings.TrimSpace(title[:best]) + "\n" + title[best:]
	}
	return title[:best+1] + "\n" + title[best+2:]
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// draw draws the figure: the title across the top, the legend at the
// right, the panels aligned in the rest, on a white background unless
// the canvas has one (the panels have none of their own).
func (pf *panelFigure) draw(dc draw.Canvas, background bool) {
	if background {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
	}
	pad := vg.Points(6)
	ts := plot.New().Title.TextStyle
	ts.Font.Size = vg.Points(11)
	ts.XAlign, ts.YAlign = draw.XCenter, draw.YTop
	title := titleLines(ts, pf.title, dc.Max.X-dc.Min.X-2*pad)
	dc.FillText(ts, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - pad}, title)
	titleH := ts.Height(title) + 2*pad

	// The legend's width: its widest entry, its swatch and some air.
	var widest vg.Length
	for _, n := range pf.legendNames {
		widest = max(widest, pf.legend.TextStyle.Width(n))
	}
	legendW := widest + pf.legend.ThumbnailWidth + pf.legend.TextStyle.Width(" ") + 2*pad
	legendArea := draw.Crop(dc, dc.Max.X-dc.Min.X-legendW+pad, -pad, pad, -titleH-pad)
	pf.legend.Draw(legendArea)

	area := draw.Crop(dc, 0, -legendW, 0, -titleH)
	tiles := draw.Tiles{Rows: len(pf.plots), Cols: len(pf.plots[0]), PadX: vg.Points(12), PadY: vg.Points(10),
		PadLeft: pad, PadRight: vg.Points(10), PadBottom: pad}
	canvases := plot.Align(pf.plots, tiles, area)
	for j, row := range pf.plots {
		for i, p := range row {
			if p != nil {
				p.Draw(canvases[j][i])
			}
		}
	}
}
