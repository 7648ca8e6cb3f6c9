package summary

import (
	"io"
	"strings"
	"unicode/utf8"
)

// GridCell is one table entry: text, plus a marker kept in its own slot so that
// right-aligned numbers stay aligned whether or not they carry one.
type GridCell struct {
	Text, mark string
}

// GridColumn describes one table column.
type GridColumn struct {
	Header string
	Left   bool // left-aligned (text); numbers are right-aligned
	// join, if set, separates this column from the next instead of the
	// usual gap, but only on rows where the next column is not empty
	// (used for "mean ± half-width").
	join string
}

// GridRow is one line of the grid: cells, or a section heading that spans the
// table (then Cells is nil).
type GridRow struct {
	Cells   []GridCell
	section string
}

const gap = "  "

// RenderGrid writes header and rows aligned, with no trailing spaces.
func RenderGrid(w io.Writer, cols []GridColumn, rows []GridRow) error {
	width := make([]int, len(cols)) // whole column, marker slot included
	markW := make([]int, len(cols))
	for _, r := range rows {
		for i, c := range r.Cells {
			markW[i] = max(markW[i], Runes(c.mark))
		}
	}
	for i, c := range cols {
		width[i] = Runes(c.Header)
		for _, r := range rows {
			if r.Cells != nil {
				width[i] = max(width[i], Runes(r.Cells[i].Text)+markW[i])
			}
		}
	}
	var b strings.Builder
	line := func(cells []GridCell, header bool) {
		var l strings.Builder
		for i, c := range cells {
			if i > 0 {
				sep := gap
				if j := cols[i-1].join; j != "" {
					sep = strings.Repeat(" ", Runes(j))
					if c.Text != "" {
						sep = j
					}
				}
				l.WriteString(sep)
			}
			textW := width[i] - markW[i]
			switch {
			case header && (cols[i].Left || Runes(c.Text) > textW):
				l.WriteString(pad(c.Text, width[i], cols[i].Left))
			default: // numbers and their headers end where the digits end
				l.WriteString(pad(c.Text, textW, cols[i].Left) + pad(c.mark, markW[i], true))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	hdr := make([]GridCell, len(cols))
	for i, c := range cols {
		hdr[i] = GridCell{Text: c.Header}
	}
	line(hdr, true)
	for _, r := range rows {
		if r.Cells == nil {
			b.WriteString(r.section)
			b.WriteByte('\n')
			continue
		}
		line(r.Cells, false)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Runes is the width of s in terminal columns (one per rune).
func Runes(s string) int { return utf8.RuneCountInString(s) }

func pad(s string, width int, left bool) string {
	n := width - Runes(s)
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
		if words > 0 && Runes(cur)+1+Runes(word) > width {
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
