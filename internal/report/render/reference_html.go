package render

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/tunbench/tunbench/internal/report/summary"
)

// referenceHTML renders the reference rows as a table of class
// "reference": with figure == "" every row, with a link to the figure
// that draws ours; otherwise the rows drawn in that figure, for its
// caption.
func referenceHTML(r BuiltRun, figure string) template.HTML {
	refs := r.References
	var rows []summary.ReferenceRow
	for _, row := range refs.Rows {
		if figure == "" || row.Figure == figure {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return ""
	}
	e := template.HTMLEscapeString
	var b strings.Builder
	if figure == "" {
		fmt.Fprintf(&b, "<h3 id=\"%s-reference\">The paper's numbers beside ours</h3>\n<p class=\"muted\">Published figures from %s, as the scenario's reference block gives them. "+
			"Testbeds differ by orders of magnitude, so what carries over is the shape: the paper's value as %% of the paper's native and ours as %% of ours; "+
			"the note judges the paper's %% against our 95%% interval and gives ours over the paper's. "+
			"Ratio is ours over the paper's absolute value, judged only on a testbed of the paper's class. A row whose implementation differs from the paper's is not judged.</p>\n",
			e(r.Run.ID), e(refs.Source))
	}
	b.WriteString(`<div class="tw"><table class="reference"><thead><tr><th class="l">method</th><th class="l">figure</th><th>paper</th><th>ours</th><th>ratio</th><th>% of native: paper / ours</th><th class="l">note</th><th class="l">source</th>`)
	if figure == "" {
		b.WriteString(`<th class="l">drawn in</th>`)
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, row := range rows {
		cls := ""
		if row.Disagree {
			cls = ` class="disagree"`
		}
		what := row.What()
		if row.Row != "" && row.Row != row.Ref.Method && row.Row != summary.WithDatapath(row.Ref.Method, row.Datapath) {
			what += " — " + row.Row
		}
		fmt.Fprintf(&b, `<tr%s><td class="l">%s</td><td class="l">%s</td><td>%s %s</td><td>%s</td><td>%s</td><td>%s</td><td class="l">%s</td><td class="l">%s</td>`,
			cls, e(row.Method()), e(what), e(summary.PaperNum(row.Paper)), e(row.Unit), e(row.OursText()), e(row.RatioText()),
			e(row.Percents()), e(row.Note), e(row.Source()))
		if figure == "" {
			if row.Figure != "" {
				fmt.Fprintf(&b, `<td class="l"><a href="#%s">figure</a></td>`, e(row.Figure))
			} else {
				b.WriteString(`<td class="l">` + summary.Missing + `</td>`)
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
	if figure == "" && len(refs.Rankings) > 0 {
		b.WriteString(`<ul class="rankings">`)
		for _, l := range refs.Rankings {
			b.WriteString("<li>" + e(l) + "</li>")
		}
		b.WriteString("</ul>\n")
	}
	return template.HTML(b.String())
}

// renderedIDs are the ids of the rendered figures.
func renderedIDs(figs []Rendered) []string {
	ids := make([]string, 0, len(figs))
	for _, f := range figs {
		ids = append(ids, f.ID)
	}
	return ids
}
