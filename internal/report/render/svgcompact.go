package render

import (
	"bytes"
)

// compactSVG shortens gonum/plot's SVG without changing what it draws:
// it drops the font properties that only restate the defaults
// (font-variant, font-weight and font-style normal), and merges runs of
// consecutive unfilled paths with the same style (tick marks, grid lines,
// error bars: one element each) into one path of several subpaths, which
// strokes the same (every subpath starts with its own moveto, and a dash
// pattern restarts at each). Figures shrink by about 40%, which keeps a
// large report's HTML, where they are inline, small.
func compactSVG(svg []byte) []byte {
	svg = bytes.ReplaceAll(svg, []byte("font-variant:normal;font-weight:normal;font-style:normal;"), nil)
	const pre, mid, post = `<path d="`, `" style="fill:none;`, `" />`
	out := make([]byte, 0, len(svg))
	var style []byte // style of the open merged path, after "fill:none;"
	closePath := func() {
		if style != nil {
			out = append(out, mid...)
			out = append(out, style...)
			out = append(out, post...)
			out = append(out, '\n')
			style = nil
		}
	}
	lines := bytes.Split(svg, []byte("\n"))
	for i, line := range lines {
		d, st, ok := strokePath(line, pre, mid, post)
		switch {
		case ok && style != nil && bytes.Equal(st, style):
			out = append(out, d...) // another subpath of the open path
		case ok:
			closePath()
			out = append(out, pre...)
			out = append(out, d...)
			style = st
		default:
			closePath()
			out = append(out, line...)
			if i < len(lines)-1 {
				out = append(out, '\n')
			}
		}
	}
	closePath()
	return out
}

// strokePath splits a line that is exactly one unfilled path into its
// path data and the rest of its style.
func strokePath(line []byte, pre, mid, post string) (d, style []byte, ok bool) {
	if !bytes.HasPrefix(line, []byte(pre)) || !bytes.HasSuffix(line, []byte(post)) {
		return nil, nil, false
	}
	body := line[len(pre) : len(line)-len(post)]
	i := bytes.Index(body, []byte(mid))
	if i < 0 || bytes.IndexByte(body[:i], '"') >= 0 || bytes.IndexByte(body[i+len(mid):], '"') >= 0 {
		return nil, nil, false
	}
	return body[:i], body[i+len(mid):], true
}
