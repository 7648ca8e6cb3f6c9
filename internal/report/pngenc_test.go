package report

import (
	"bytes"
	"image"
	"image/png"
	"slices"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// figureImage draws the first of the fixture's throughput figures as an
// image, as Rendered.PNG does.
func figureImage(t testing.TB) *image.RGBA {
	run, cells := seedRun()
	var c Chart
	for _, ch := range Charts(run, cells) {
		if seedKind(ch.ID) == "throughput-methods" {
			c = ch
			break
		}
	}
	rs, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	img := vgimg.NewWith(vgimg.UseWH(figWidth, rs[0].height()), vgimg.UseDPI(pngDPI))
	rs[0].drawOn(draw.New(img))
	return img.Image().(*image.RGBA)
}

// TestEncodePNG: a figure written by encodePNG decodes to the very pixels
// drawn, and is no more than a tenth larger than image/png's file.
func TestEncodePNG(t *testing.T) {
	img := figureImage(t)
	var mine, std bytes.Buffer
	if err := encodePNG(&mine, img); err != nil {
		t.Fatal(err)
	}
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&std, img); err != nil {
		t.Fatal(err)
	}
	back, err := png.Decode(bytes.NewReader(mine.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if back.Bounds() != img.Bounds() {
		t.Fatalf("decoded %v, drew %v", back.Bounds(), img.Bounds())
	}
	for y := img.Rect.Min.Y; y < img.Rect.Max.Y; y++ {
		for x := img.Rect.Min.X; x < img.Rect.Max.X; x++ {
			r1, g1, b1, a1 := img.At(x, y).RGBA()
			r2, g2, b2, a2 := back.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				t.Fatalf("pixel %d,%d: drew %v, decoded %v", x, y, img.At(x, y), back.At(x, y))
			}
		}
	}
	if mine.Len() > std.Len()*11/10 {
		t.Errorf("%d bytes, image/png writes %d", mine.Len(), std.Len())
	}
	t.Logf("%d bytes, image/png %d", mine.Len(), std.Len())
}

// BenchmarkEncodePNG: encodePNG against image/png on one figure, in CPU
// time (wall time moves with the machine's other work).
func BenchmarkEncodePNG(b *testing.B) {
	img := figureImage(b)
	for _, enc := range []struct {
		name string
		f    func(*bytes.Buffer) error
	}{
		{"tunbench", func(w *bytes.Buffer) error { return encodePNG(w, img) }},
		{"image-png", func(w *bytes.Buffer) error { return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(w, img) }},
	} {
		b.Run(enc.name, func(b *testing.B) {
			cpu0 := cpuSeconds(b)
			for b.Loop() {
				var w bytes.Buffer
				if err := enc.f(&w); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(1e3*(cpuSeconds(b)-cpu0)/float64(b.N), "cpu-ms/op")
		})
	}
}

// TestPNGCanvasReused: a figure drawn on a reused raster (after another
// figure), without painting its background again, has the very pixels of
// one drawn whole on a new vgimg canvas.
func TestPNGCanvasReused(t *testing.T) {
	run, cells := seedRun()
	charts := Charts(run, cells)
	var rs []Rendered
	panels := slices.IndexFunc(charts, func(c Chart) bool { return c.Kind == KindPanels })
	for _, i := range []int{0, len(charts) - 1, panels, 1} {
		r, err := Render(charts[i])
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r[0])
	}
	for _, r := range rs {
		fresh := vgimg.NewWith(vgimg.UseWH(figWidth, r.height()), vgimg.UseDPI(pngDPI))
		if r.panels != nil {
			r.panels.draw(draw.New(fresh), true)
		} else {
			r.fig.draw(draw.New(fresh))
		}
		reused, release := pngCanvas(r.height())
		r.drawOn(draw.New(reused))
		a, b := fresh.Image().(*image.RGBA), reused.Image().(*image.RGBA)
		if a.Rect != b.Rect || !bytes.Equal(a.Pix, b.Pix) {
			t.Errorf("%s: reused raster %v differs from a new one %v", r.ID, b.Rect, a.Rect)
		}
		release()
	}
}
