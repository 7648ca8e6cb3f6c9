package render

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestPNGLossless: every figure of the fixture runs, written as PNG,
// decodes to exactly the pixels drawn, at 600 x 360, and those are the
// pixels gonum/plot's own image canvas draws (textCanvas places glyphs
// itself, the encoder is tunbench's).
func TestPNGLossless(t *testing.T) {
	var paletted, truecolor int
	for _, rr := range fixtureDB(t) {
		for _, c := range Charts(rr.Run, rr.Cells) {
			rs, err := Render(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				img, release := r.raster()
				defer release()
				// The reference: vgimg's canvas as it makes it, background
				// filled by the figure itself.
				ref := vgimg.NewWith(vgimg.UseWH(figWidth, r.height()), vgimg.UseDPI(pngDPI))
				if r.panels != nil {
					r.panels.draw(draw.New(ref), true)
				} else {
					r.fig.drawOn(draw.New(ref), true)
				}
				if !bytes.Equal(img.Pix, ref.Image().(*image.RGBA).Pix) {
					t.Errorf("%s: drawn on the prepared image, pixels differ from vgimg's canvas", r.FileStem())
				}
				data, err := r.PNG()
				if err != nil {
					t.Fatal(err)
				}
				got, err := png.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%s: %v", r.FileStem(), err)
				}
				want := image.Rect(0, 0, 600, int(r.height().Dots(pngDPI)+0.5))
				if got.Bounds() != want || img.Bounds() != want {
					t.Errorf("%s: %v, drawn %v, want %v", r.FileStem(), got.Bounds(), img.Bounds(), want)
				}
				if _, ok := got.(*image.Paletted); ok {
					paletted++
				} else {
					truecolor++
				}
				for y := 0; y < want.Dy(); y++ {
					for x := 0; x < want.Dx(); x++ {
						r1, g1, b1, a1 := got.At(x, y).RGBA()
						r2, g2, b2, a2 := img.At(x, y).RGBA()
						if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
							t.Fatalf("%s: pixel %d,%d is %v, drawn %v", r.FileStem(), x, y, got.At(x, y), img.At(x, y))
						}
					}
				}
			}
		}
	}
	t.Logf("%d paletted, %d true colour", paletted, truecolor)
}

// TestEncodePNGKinds: an image of few colours (written with a palette),
// one of many (RGB) and one with transparency (left to image/png) each
// decode to the pixels encoded.
func TestEncodePNGKinds(t *testing.T) {
	few := image.NewRGBA(image.Rect(0, 0, 70, 30))
	many := image.NewRGBA(image.Rect(0, 0, 70, 30))
	clear := image.NewRGBA(image.Rect(0, 0, 70, 30))
	for y := range 30 {
		for x := range 70 {
			few.Set(x, y, color.RGBA{uint8(x % 3 * 100), 0, uint8(y % 2 * 200), 0xff})
			many.Set(x, y, color.RGBA{uint8(x), uint8(y), uint8(x * y), 0xff})
			clear.Set(x, y, color.RGBA{uint8(x), 0, 0, uint8(x)})
		}
	}
	for _, tc := range []struct {
		name  string
		img   *image.RGBA
		model color.Model
	}{
		{"few colours", few, nil},
		{"many colours", many, color.RGBAModel},
		{"transparent", clear, color.NRGBAModel},
	} {
		var b bytes.Buffer
		if err := encodePNG(&b, tc.img); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p, ok := got.(*image.Paletted); tc.model == nil && (!ok || len(p.Palette) != 6) {
			t.Errorf("%s: decoded as %T, want a palette of 6 colours", tc.name, got)
		} else if tc.model != nil && got.ColorModel() != tc.model {
			t.Errorf("%s: decoded with colour model %v, want %v", tc.name, got.ColorModel(), tc.model)
		}
		if got.Bounds() != tc.img.Bounds() {
			t.Fatalf("%s: %v, want %v", tc.name, got.Bounds(), tc.img.Bounds())
		}
		for y := range 30 {
			for x := range 70 {
				r1, g1, b1, a1 := got.At(x, y).RGBA()
				r2, g2, b2, a2 := tc.img.At(x, y).RGBA()
				if r1>>8 != r2>>8 || g1>>8 != g2>>8 || b1>>8 != b2>>8 || a1 != a2 {
					t.Fatalf("%s: pixel %d,%d is %v, encoded %v", tc.name, x, y, got.At(x, y), tc.img.At(x, y))
				}
			}
		}
	}
}
