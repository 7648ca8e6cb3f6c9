package report

import (
	"io"
	"strings"
	"unicode/utf8"
)

// cell is one table entry: text, plus a marker kept in its own slot so that
// right-aligned numbers stay aligned whether or not they carry one.
type cell struct {
	text, mark string
}

// column describes one table column.
type column struct {
	header string
	left   bool // left-aligned (text); numbers are right-aligned
	// join, if set, separates this column from the next instead of the
	// usual gap, but only on rows where the next column is not empty
	// (used for "mean ± half-width").
	join string
}

// row is one line of the grid: cells, or a section heading that spans the
// table (then cells is nil).
type row struct {
	cells   []cell
	section string
}

const gap = "  "

// renderGrid writes header and rows aligned, with no trailing spaces.
func renderGrid(w io.Writer, cols []column, rows []row) error {
	width := make([]int, len(cols)) // whole column, marker slot included
	markW := make([]int, len(cols))
	for _, r := range rows {
		for i, c := range r.cells {
			markW[i] = max(markW[i], runes(c.mark))
		}
	}
	for i, c := range cols {
		width[i] = runes(c.header)
		for _, r := range rows {
			if r.cells != nil {
				width[i] = max(width[i], runes(r.cells[i].text)+markW[i])
			}
		}
	}
	var b strings.Builder
	line := func(cells []cell, header bool) {
		var l strings.Builder
		for i, c := range cells {
			if i > 0 {
				sep := gap
				if j := cols[i-1].join; j != "" {
					sep = strings.Repeat(" ", runes(j))
					if c.text != "" {
						sep = j
					}
				}
				l.WriteString(sep)
			}
			textW := width[i] - markW[i]
			switch {
			case header && (cols[i].left || runes(c.text) > textW):
				l.WriteString(pad(c.text, width[i], cols[i].left))
			default: // numbers and their headers end where the digits end
				l.WriteString(pad(c.text, textW, cols[i].left) + pad(c.mark, markW[i], true))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	hdr := make([]cell, len(cols))
	for i, c := range cols {
		hdr[i] = cell{text: c.header}
	}
	line(hdr, true)
	for _, r := range rows {
		if r.cells == nil {
			b.WriteString(r.section)
			b.WriteByte('\n')
			continue
		}
		line(r.cells, false)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func runes(s string) int { return utf8.RuneCountInString(s) }

func pad(s string, width int, left bool) string {
	n := width - runes(s)
	if n <= 0 {
		return s
	}
	if left {
		return s + strings.Repeat(" ", n)
	}
	return strings.Repeat(" ", n) + s
}

// wrap breaks text into lines of at most width runes, indenting
// continuation lines by indent. A word longer than a line is kept whole.
func wrap(text string, width int, indent string) []string {
	var (
		lines []string
		cur   = ""
		words = 0
	)
	for _, word := range strings.Fields(text) {
		if words > 0 && runes(cur)+1+runes(word) > width {
			lines = append(lines, cur)
			cur, words = indent, 0
		}
		if words > 0 {
			cur += " "
		}
		cur += word
		words++
	}
	if words > 0 {
		lines = append(lines, cur)
	}
	return lines
}
