package render

import (
	"image"
	"image/color"
	"image/draw"
	"math"

	xfont "golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// textCanvas is vgimg's canvas drawing its upright texts itself. vgimg
// (through gg) places every glyph with a general affine transform and
// bilinear sampling, even when the transform is the identity, as it is
// for every text but a rotated axis label; that was a third of drawing a
// figure as PNG. textCanvas draws those glyphs with their masks directly,
// at the same positions, and leaves rotated text to vgimg.
type textCanvas struct {
	*vgimg.Canvas
	img *image.RGBA
	// colors is the colour of each level of Push; moved whether that
	// level was rotated, translated or scaled (vgimg's own transform
	// flips y only).
	colors []color.Color
	moved  []bool
	faces  map[faceKey]xfont.Face
}

// faceKey is a font at a size; textCanvas keeps one face for each, not
// one per text as vgimg does.
type faceKey struct {
	face *opentype.Font
	size vg.Length
}

func newTextCanvas(c *vgimg.Canvas, img *image.RGBA) *textCanvas {
	return &textCanvas{Canvas: c, img: img, colors: []color.Color{color.Black}, moved: []bool{false},
		faces: map[faceKey]xfont.Face{}}
}

func (c *textCanvas) SetColor(col color.Color) {
	if col == nil {
		col = color.Black
	}
	c.colors[len(c.colors)-1] = col
	c.Canvas.SetColor(col)
}

func (c *textCanvas) Push() {
	c.colors = append(c.colors, c.colors[len(c.colors)-1])
	c.moved = append(c.moved, c.moved[len(c.moved)-1])
	c.Canvas.Push()
}

func (c *textCanvas) Pop() {
	c.colors = c.colors[:len(c.colors)-1]
	c.moved = c.moved[:len(c.moved)-1]
	c.Canvas.Pop()
}

func (c *textCanvas) Rotate(t float64) {
	c.moved[len(c.moved)-1] = true
	c.Canvas.Rotate(t)
}

func (c *textCanvas) Translate(pt vg.Point) {
	c.moved[len(c.moved)-1] = true
	c.Canvas.Translate(pt)
}

func (c *textCanvas) Scale(x, y float64) {
	c.moved[len(c.moved)-1] = true
	c.Canvas.Scale(x, y)
}

// FillString draws str with its baseline starting at pt, as
// vgimg.Canvas.FillString and gg's drawString do, glyph by glyph.
func (c *textCanvas) FillString(f font.Face, pt vg.Point, str string) {
	if c.moved[len(c.moved)-1] {
		c.Canvas.FillString(f, pt, str)
		return
	}
	if f.Font.Size == 0 {
		return
	}
	dpi := c.DPI()
	key := faceKey{face: f.Face, size: f.Font.Size}
	face := c.faces[key]
	if face == nil {
		face = f.FontFace(dpi)
		c.faces[key] = face
	}
	_, h := c.Size()
	x, y := pt.X.Dots(dpi), h.Dots(dpi)-pt.Y.Dots(dpi)
	dot := fixed.Point26_6{X: fixed.Int26_6(math.Round(x * 64)), Y: fixed.Int26_6(math.Round(y * 64))}
	src := image.NewUniform(c.colors[len(c.colors)-1])
	prev := rune(-1)
	for _, r := range str {
		if prev >= 0 {
			dot.X += face.Kern(prev, r)
		}
		dr, mask, maskp, advance, ok := face.Glyph(dot, r)
		if !ok {
			continue
		}
		draw.DrawMask(c.img, dr, src, image.Point{}, mask, maskp, draw.Over)
		dot.X += advance
		prev = r
	}
}
