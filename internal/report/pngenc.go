package report

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"sync"

	"git.sr.ht/~sbinet/gg"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// rasters keeps the images figures are rasterised into for reuse, one
// pool per size: a new canvas allocated and copied a fresh image per
// figure, a tenth of a large report's CPU with the garbage it made.
var rasters sync.Map // image.Point -> *sync.Pool of *image.RGBA

// pngCanvas returns a raster canvas of the figure width and height h at
// pngDPI, and a function that gives its image back once encoded.
func pngCanvas(h vg.Length) (*vgimg.Canvas, func()) {
	var w vg.Length = figWidth / vg.Inch * pngDPI
	size := image.Pt(int(w+0.5), int(h/vg.Inch*pngDPI+0.5))
	p, _ := rasters.LoadOrStore(size, &sync.Pool{New: func() any { return image.NewRGBA(image.Rectangle{Max: size}) }})
	pool := p.(*sync.Pool)
	img := pool.Get().(*image.RGBA)
	// As vgimg.NewWith sets up its own context, without copying the image;
	// the canvas paints its background over all of it.
	ctx := gg.NewContextForRGBA(img)
	ctx.SetLineCapButt()
	ctx.InvertY()
	return vgimg.NewWith(vgimg.UseImageWithContext(img, ctx), vgimg.UseDPI(pngDPI)), func() { pool.Put(img) }
}

// encodePNG writes m as a PNG file. An opaque *image.RGBA (every figure:
// plots paint their background) is written as 8-bit RGB with the "up"
// filter on every row and the fastest deflate level. The standard
// encoder tries five filters on every row to pick one, which was a third
// of a large report's CPU time; on figures (flat areas, lines) the up
// filter compresses nearly as well. Anything else goes to image/png.
func encodePNG(w io.Writer, m image.Image) error {
	rgba, ok := m.(*image.RGBA)
	if !ok || !rgba.Opaque() {
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		return enc.Encode(w, m)
	}
	b := rgba.Bounds()
	width, height := b.Dx(), b.Dy()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:4], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:8], uint32(height))
	ihdr[8], ihdr[9] = 8, 2 // 8 bits per sample, truecolour; deflate, adaptive filtering, no interlace
	writeChunk(&out, "IHDR", ihdr[:])

	var z bytes.Buffer
	zw, err := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	if err != nil {
		return fmt.Errorf("encode png: %w", err)
	}
	row := make([]byte, 1+3*width) // filter type 0 (none), then R, G, B per pixel
	for y := range height {
		pix := rgba.Pix[y*rgba.Stride : y*rgba.Stride+4*width]
		for x, j := 0, 1; x < len(pix); x, j = x+4, j+3 {
			row[j], row[j+1], row[j+2] = pix[x], pix[x+1], pix[x+2]
		}
		if _, err := zw.Write(row); err != nil {
			return fmt.Errorf("encode png: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("encode png: %w", err)
	}
	writeChunk(&out, "IDAT", z.Bytes())
	writeChunk(&out, "IEND", nil)
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("encode png: %w", err)
	}
	return nil
}

// writeChunk appends one PNG chunk: length, type, data, CRC of type and
// data.
func writeChunk(b *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	b.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	b.WriteString(typ)
	b.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	b.Write(n[:])
}
