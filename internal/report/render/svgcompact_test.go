package render

import (
	"bytes"
	"encoding/xml"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

var (
	svgElemRE = regexp.MustCompile(`<(path|text)[^>]*?(?: d="([^"]*)")?[^>]*?style="([^"]*)"[^>]*>([^<]*)`)
	subpathRE = regexp.MustCompile(`M[^M]*`)
)

// drawn lists what an SVG draws, in order: every subpath with its style,
// every text with its style and words.
func drawn(svg []byte) []string {
	var out []string
	for _, m := range svgElemRE.FindAllStringSubmatch(string(svg), -1) {
		style := strings.ReplaceAll(m[3], "font-variant:normal;font-weight:normal;font-style:normal;", "")
		if m[1] == "text" {
			out = append(out, "text "+style+" "+m[4])
			continue
		}
		for _, sp := range subpathRE.FindAllString(m[2], -1) {
			out = append(out, "path "+style+" "+sp)
		}
	}
	return out
}

// TestCompactSVG: every figure kind, compacted, is well-formed, draws the
// same subpaths and texts in the same order with the same styles, and is
// smaller, by at least a quarter over all kinds.
func TestCompactSVG(t *testing.T) {
	run, cells := seedRun()
	kinds := map[string]bool{}
	var before, after int
	for _, c := range Charts(run, cells) {
		if c.Kind == KindPanels || kinds[c.Section+c.Kind] {
			continue
		}
		kinds[c.Section+c.Kind] = true
		fig, err := buildFigure(c, c.LogX)
		if err != nil {
			t.Fatal(err)
		}
		svg := vgsvg.New(figWidth, figHeight)
		fig.drawOn(draw.New(svg), true)
		var raw bytes.Buffer
		if _, err := svg.WriteTo(&raw); err != nil {
			t.Fatal(err)
		}
		small := compactSVG(raw.Bytes())
		dec := xml.NewDecoder(bytes.NewReader(small))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: compacted SVG is not well-formed: %v", c.ID, err)
			}
		}
		if a, b := drawn(raw.Bytes()), drawn(small); !slices.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s: compacted SVG draws other things: %d elements against %d", c.ID, len(b), len(a))
		}
		if len(small) >= raw.Len() {
			t.Errorf("%s: %d bytes compacted from %d", c.ID, len(small), raw.Len())
		}
		before, after = before+raw.Len(), after+len(small)
	}
	if after > before*3/4 {
		t.Errorf("figures compacted from %d to %d bytes, want a quarter less", before, after)
	}
	if len(kinds) < 8 {
		t.Errorf("only %d figure kinds checked", len(kinds))
	}
}
