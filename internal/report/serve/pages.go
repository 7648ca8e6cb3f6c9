package serve

import (
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/report/trend"
)

var funcs = template.FuncMap{
	"when":   func(t time.Time) string { return t.Local().Format(time.DateTime) },
	"join":   strings.Join,
	"metric": trend.MetricName,
	"value":  trend.Value,
	"pct":    func(v float64) string { return fmt.Sprintf("%+.1f%%", v) },
	"p":      func(v float64) string { return fmt.Sprintf("%.2g", v) },
	"cvpct":  func(cv float64) float64 { return cv * 100 },
	"seriesURL": func(id string) string {
		return "/trend/series?" + url.Values{"id": {id}}.Encode()
	},
	"short": func(id string) string {
		if len(id) > 12 {
			return id[:12]
		}
		return id
	},
}

var pages = template.Must(template.New("").Funcs(funcs).Parse(`
{{define "head"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · tunbench</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
nav a{margin-right:1em}
table{border-collapse:collapse}
th,td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
form.filter label{margin-right:.8em}
.regression{color:#b00020;font-weight:600}
.improvement{color:#1b5e20}
.acked{color:#777}
.note{color:#555;font-size:90%}
.excluded{color:#999}
</style></head><body>
<nav><a href="/">runs</a><a href="/trend">trend</a></nav>
{{end}}

{{define "error"}}{{template "head" .}}
<h1>{{.Status}} {{.Text}}</h1>
<p id="error">{{.Msg}}</p>
</body></html>{{end}}

{{define "runs"}}{{template "head" .}}
<h1>Runs</h1>
<form class="filter" method="get" action="/">
<label>method <input name="method" value="{{.Filter.Method}}"></label>
<label>testbed <input name="testbed" value="{{.Filter.Testbed}}"></label>
<label>machine <input name="machine" value="{{.Filter.Machine}}"></label>
<label>kernel <input name="kernel" value="{{.Filter.Kernel}}"></label>
<label>label <input name="label" value="{{.Filter.Label}}" placeholder="key=value"></label>
<button>filter</button></form>
<p>{{.Matched}} of {{.Total}} runs{{if gt .Pages 1}}, {{.First}} to {{.Last}} here{{end}}. Tick two to compare them.</p>
<form method="get" action="/compare" id="compare">
<table id="runs"><thead><tr><th>a</th><th>b</th><th>run</th><th>started</th><th>status</th><th>testbed</th><th>machine</th><th>kernel</th><th>methods</th></tr></thead><tbody>
{{range .Rows}}<tr class="run"><td><input type="radio" name="a" value="{{.ID}}"></td><td><input type="radio" name="b" value="{{.ID}}"></td>
<td><a class="runlink" href="/run/{{.ID}}">{{.ID}}</a></td><td>{{when .Started}}</td><td>{{.Status}}</td><td>{{.Testbed}}</td><td>{{.Machine}}</td><td>{{.Host.Kernel}}</td><td>{{join .Methods ", "}}</td></tr>
{{end}}</tbody></table>
<button>compare a with b</button></form>
{{if gt .Pages 1}}<p class="pages">page {{.Page}} of {{.Pages}}{{if .Newer}} · <a rel="prev" href="{{.Newer}}">newer runs</a>{{end}}{{if .Older}} · <a rel="next" href="{{.Older}}">older runs</a>{{end}}</p>
{{end}}</body></html>{{end}}

{{define "trend"}}{{template "head" .}}
<h1>Trend</h1>
<p>Series of the stored runs, one point per run; change points from E-divisive means with Student's t-test (docs/results.md).</p>
<table id="series"><thead><tr><th>series</th><th>machine</th><th>testbed</th><th>runs</th><th>change points</th></tr></thead><tbody>
{{range .Series}}<tr><td><a class="serieslink" href="{{seriesURL .ID}}">{{.Key}} {{metric .Metric}}</a></td><td>{{.Machine}}</td><td>{{.Testbed}}</td><td>{{len .Points}}</td>
<td>{{range .Changes}}<span class="{{if .Acked}}acked{{else if .Regression}}regression{{else}}improvement{{end}}">{{pct .Percent}}</span> {{end}}</td></tr>
{{else}}<tr><td colspan="5">no series: no stored run has a cell that passes the filters</td></tr>
{{end}}</tbody></table>
</body></html>{{end}}

{{define "series"}}{{template "head" .}}
<h1>{{.Title}}</h1>
<figure id="trendchart">{{.Chart}}<figcaption>One point per run (mean over its repetitions); hollow grey points were measured on a busy or emulated host and left out. Red lines mark change points; each point and line links to its run.</figcaption></figure>
<h2>Change points</h2>
{{$s := .Series}}
{{range .Series.Changes}}<div class="change" id="change-{{.ID}}">
<p><b>change {{.ID}}</b>: <span class="{{if .Acked}}acked{{else if .Regression}}regression{{else}}improvement{{end}}">{{pct .Percent}}</span>
({{value .Before $s.Unit}} → {{value .After $s.Unit}}, p={{p .P}}, {{.NBefore}} runs before, {{.NAfter}} after){{if .Regression}} regression{{else}} improvement{{end}}{{if .Acked}}, acknowledged{{end}}</p>
<p>last run before: <a href="/run/{{.LastBefore}}">{{.LastBefore}}</a> ({{when .BeforeTime}}); first run after: <a class="firstafter" href="/run/{{.FirstAfter}}">{{.FirstAfter}}</a> ({{when .AfterTime}}) · <a href="/compare?a={{.LastBefore}}&amp;b={{.FirstAfter}}">compare them</a></p>
<ul>{{range .Differences}}<li>{{.Fact}}: {{.Before}} → {{.After}}</li>{{else}}<li>nothing tunbench records changed between them (kernel, tools, labels)</li>{{end}}</ul>
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
</div>
{{else}}<p>No change point.</p>{{end}}
<h2>Runs</h2>
<table><thead><tr><th>run</th><th>started</th><th>{{metric .Series.Metric}}</th><th>n</th><th>CV</th><th></th></tr></thead><tbody>
{{range .Series.Points}}<tr{{if .Excluded}} class="excluded"{{end}}><td><a href="/run/{{.RunID}}">{{.RunID}}</a></td><td>{{when .Started}}</td><td>{{value .Mean $s.Unit}}</td><td>{{.N}}</td><td>{{printf "%.1f%%" (cvpct .CV)}}</td><td>{{with .Excluded}}left out: {{.}}{{end}}{{if .Unstable}} unstable{{end}}</td></tr>
{{end}}</tbody></table>
</body></html>{{end}}
`))

// chart draws a series as an inline SVG: points per run, the means of
// the segments between change points, and a marked, linked line at each
// change point.
func chart(s trend.Series) template.HTML {
	const w, h, left, right, top, bottom = 760.0, 300.0, 70.0, 20.0, 20.0, 40.0
	n := len(s.Points)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range s.Points {
		lo, hi = min(lo, p.Mean), max(hi, p.Mean)
	}
	if n == 0 {
		return ""
	}
	lo = min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	hi *= 1.05
	x := func(i int) float64 {
		if n == 1 {
			return left + (w-left-right)/2
		}
		return left + float64(i)*(w-left-right)/float64(n-1)
	}
	y := func(v float64) float64 { return top + (hi-v)/(hi-lo)*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s">`, w, h, w, h, template.HTMLEscapeString(s.Title()))
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#444"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#444"/>`, left, top, left, h-bottom)
	for _, v := range []float64{lo, (lo + hi) / 2, hi} {
		fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="11" text-anchor="end">%s</text>`, left-6, y(v)+4, template.HTMLEscapeString(trend.Value(v, s.Unit)))
	}
	// Segment means.
	start := 0
	for k := 0; k <= len(s.Changes); k++ {
		end := n
		mean := 0.0
		if k < len(s.Changes) {
			end = s.Changes[k].Index
			mean = s.Changes[k].Before
		} else if len(s.Changes) > 0 {
			mean = s.Changes[k-1].After
		} else {
			var sum float64
			var c int
			for _, p := range s.Points {
				if p.Excluded == "" {
					sum += p.Mean
					c++
				}
			}
			if c > 0 {
				mean = sum / float64(c)
			}
		}
		if end > start {
			fmt.Fprintf(&b, `<line class="segment" x1="%g" y1="%g" x2="%g" y2="%g" stroke="#1f77b4" stroke-opacity=".5" stroke-width="2"/>`, x(start), y(mean), x(end-1), y(mean))
		}
		start = end
	}
	for _, c := range s.Changes {
		cx := (x(c.Index-1) + x(c.Index)) / 2
		if c.Index == 0 {
			cx = x(0)
		}
		color := "#d62728"
		if c.Acked {
			color = "#999"
		}
		fmt.Fprintf(&b, `<a href="/run/%s"><g class="changepoint" data-change="%s" data-run="%s"><title>change %s: %+.1f%%, first run after %s</title><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2" stroke-dasharray="6 3"/><text x="%g" y="%g" font-size="11" fill="%s">%+.1f%%</text></g></a>`,
			url.PathEscape(c.FirstAfter), c.ID, template.HTMLEscapeString(c.FirstAfter), c.ID, c.Percent, template.HTMLEscapeString(c.FirstAfter),
			cx, top, cx, h-bottom, color, cx+4, top+12, color, c.Percent)
	}
	for i, p := range s.Points {
		fill, stroke := "#1f77b4", "#1f77b4"
		if p.Excluded != "" {
			fill, stroke = "none", "#999"
		}
		fmt.Fprintf(&b, `<a href="/run/%s"><circle class="point" cx="%g" cy="%g" r="4" fill="%s" stroke="%s"><title>run %s: %s</title></circle></a>`,
			url.PathEscape(p.RunID), x(i), y(p.Mean), fill, stroke, template.HTMLEscapeString(p.RunID), template.HTMLEscapeString(trend.Value(p.Mean, s.Unit)))
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" font-size="11" text-anchor="middle">runs in the order they started (%d)</text>`, (left+w-right)/2, h-10, n)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
