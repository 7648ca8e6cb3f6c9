package report

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/stats"
)

// ReferenceRow is one published figure of the scenario's reference block
// set beside the run's own figure for the same method and condition.
type ReferenceRow struct {
	Ref scenario.ReferenceFigure `json:"reference"`
	// Paper is the published value in Unit, the unit the paper gives
	// it in; Ours is in the same unit.
	Paper float64 `json:"paper"`
	Unit  string  `json:"unit"`
	// Row names the run's row compared against ("" when none matched);
	// Key is its cell key.
	Row string `json:"row,omitempty"`
	Key string `json:"key,omitempty"`
	// Ours is the run's figure in Unit; N == 0 when not measured.
	Ours Figure `json:"ours,omitzero"`
	// Ratio is Ours.Mean / Paper; 0 when not measured.
	Ratio float64 `json:"ratio,omitempty"`
	// Disagree is true when the paper's value lies outside the 95%
	// confidence interval of ours.
	Disagree bool `json:"disagree,omitempty"`
	// Note explains a disagreement, a missing interval or a missing
	// measurement; empty when the paper's value is inside our interval.
	Note string `json:"note,omitempty"`
	// Figure is the id of the report figure that draws ours ("" when no
	// figure does).
	Figure string `json:"figure,omitempty"`
}

// References are the scenario's published figures beside the run's.
type References struct {
	Source string         `json:"source"`
	Rows   []ReferenceRow `json:"rows"`
}

// runScenario parses the scenario the run stored; a run without one, or
// with one this version cannot read, gives the zero scenario.
func runScenario(run result.Run) scenario.Scenario {
	if run.Scenario == "" {
		return scenario.Scenario{}
	}
	s, err := scenario.Parse([]byte(run.Scenario))
	if err != nil {
		return scenario.Scenario{}
	}
	return s
}

// BuildReferences sets every figure of the run's reference block beside
// the run's rows. figures are the ids of the report's figures, so each row
// can link to the one that draws ours; nil leaves the links out. A figure
// whose condition matches several rows (a dimension the reference leaves
// open) gives one row each; one that matches none says why.
func BuildReferences(run result.Run, rows []Summary, figures []string) References {
	s := runScenario(run)
	if s.Reference == nil {
		return References{}
	}
	out := References{Source: s.Reference.Source}
	v := varyingParams(rows)
	for _, ref := range s.Reference.Figures {
		inBase, _ := ref.BaseValue()
		factor := inBase / ref.Value // our base unit -> the paper's unit
		paper := ref.Value
		base := ReferenceRow{Ref: ref, Paper: paper, Unit: ref.Unit}
		matches := referenceMatches(ref, rows)
		if len(matches) == 0 {
			base.Note = notMeasured(ref, s, rows)
			out.Rows = append(out.Rows, base)
			continue
		}
		for _, m := range matches {
			r := base
			r.Row, r.Key, r.Ours = rowName(m.row, v), m.row.Key, scaleFigure(m.fig, 1/factor, ref.Unit)
			if r.Row == "" {
				r.Row = m.row.Label
			}
			r.Ratio = r.Ours.Mean / paper
			r.Disagree, r.Note = judge(paper, r.Ours, m.row.Emulated)
			r.Figure = referenceFigure(run.ID, ref, m.row, figures)
			out.Rows = append(out.Rows, r)
		}
	}
	return out
}

type refMatch struct {
	row Summary
	fig Figure
}

// referenceMatches returns the rows of ref's method whose parameters
// match ref's condition and that measured ref's metric, with that figure.
func referenceMatches(ref scenario.ReferenceFigure, rows []Summary) []refMatch {
	var out []refMatch
	for _, r := range rows {
		if r.Method != ref.Method || !conditionMatches(ref, r.Params) {
			continue
		}
		if f := referenceValue(ref, r); f.N > 0 {
			out = append(out, refMatch{r, f})
		}
	}
	if ref.Metric != scenario.MetricPeakThroughput {
		return out
	}
	// The peak: per group of rows that differ only in streams, the row
	// with the highest mean.
	var peaks []refMatch
	idx := map[baselineKey]int{}
	for _, m := range out {
		k := baselineOf(m.row.Params)
		k.Streams = 0
		i, ok := idx[k]
		switch {
		case !ok:
			idx[k] = len(peaks)
			peaks = append(peaks, m)
		case m.fig.Mean > peaks[i].fig.Mean:
			peaks[i] = m
		}
	}
	return peaks
}

// conditionMatches reports whether p satisfies every condition ref gives.
func conditionMatches(ref scenario.ReferenceFigure, p result.Params) bool {
	offloads := onOff(p.Offloads)
	if p.OffloadSet != "" {
		offloads = p.OffloadSet
	}
	dir := cmp.Or(p.Direction, scenario.DirForward)
	return (ref.Family == "" || ref.Family == p.Family) &&
		(ref.MTU == 0 || ref.MTU == p.UnderlayMTU) &&
		(ref.Offloads == "" || ref.Offloads == offloads) &&
		(ref.Streams == 0 || ref.Streams == p.Streams) &&
		(ref.MSS == 0 || ref.MSS == p.MSS) &&
		(ref.Direction == "" || ref.Direction == dir)
}

// referenceValue is r's figure for ref's test and metric, in the metric's
// base unit; N == 0 when r did not measure it.
func referenceValue(ref scenario.ReferenceFigure, r Summary) Figure {
	t := r.Tests
	if t == nil {
		t = &TestSummary{}
	}
	switch ref.Test {
	case scenario.TestTCPStream:
		switch ref.Metric {
		case scenario.MetricThroughput:
			return r.Throughput
		case scenario.MetricPercentNative:
			return percentFigure(r.PercentNative, r.Throughput)
		}
	case scenario.TestTCPRR:
		switch ref.Metric {
		case scenario.MetricP50RTT:
			return r.P50RTT
		case scenario.MetricP99RTT:
			return r.P99RTT
		}
	case scenario.TestParallel:
		switch ref.Metric {
		case scenario.MetricThroughput, scenario.MetricPeakThroughput:
			return t.Parallel
		case scenario.MetricPercentNative:
			return percentFigure(t.ParallelPercentNative, t.Parallel)
		case scenario.MetricPercentLineRate:
			if t.Parallel.N == 0 {
				return Figure{}
			}
			return t.PercentOfLineRate
		}
	case scenario.TestUDPSizes:
		i := slices.IndexFunc(t.UDP, func(u UDPSizeSummary) bool { return u.FrameBytes == ref.Frame })
		if i < 0 {
			return Figure{}
		}
		u := t.UDP[i]
		switch ref.Metric {
		case scenario.MetricThroughput:
			return u.Gbps
		case scenario.MetricPacketsPerSec:
			return u.PacketsPerSecond
		case scenario.MetricDelayP50:
			return u.DelayP50
		case scenario.MetricJitter:
			return u.Jitter
		case scenario.MetricLoss:
			return u.LossPercent
		}
	}
	return Figure{}
}

// percentFigure turns a % of native into a figure whose interval is the
// row's throughput interval over native's mean (native's own spread is
// not in it).
func percentFigure(pct *float64, tp Figure) Figure {
	if pct == nil || tp.N == 0 || tp.Mean == 0 {
		return Figure{}
	}
	k := *pct / tp.Mean
	s := tp.Summary
	return Figure{Unit: UnitPercent, Summary: stats.Summary{
		N: s.N, Mean: *pct, StdDev: k * s.StdDev, HasCI: s.HasCI,
		HalfWidth: k * s.HalfWidth, CI95Low: k * s.CI95Low, CI95High: k * s.CI95High, CV: s.CV,
	}}
}

// scaleFigure is f in another unit, k of it per unit of f.
func scaleFigure(f Figure, k float64, unit string) Figure {
	if k == 1 {
		f.Unit = unit
		return f
	}
	s := f.Summary
	s.Mean, s.StdDev, s.HalfWidth, s.CI95Low, s.CI95High = k*s.Mean, k*s.StdDev, k*s.HalfWidth, k*s.CI95Low, k*s.CI95High
	return Figure{Unit: unit, Summary: s}
}

// refNum writes a value with three significant digits below 1 and as
// num3 above.
func refNum(v float64) string {
	if v != 0 && v < 1 && v > -1 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return num3(v)
}

// judge says whether paper lies outside ours's 95% interval, and the note
// for the reader.
func judge(paper float64, ours Figure, emulated bool) (bool, string) {
	var notes []string
	if emulated {
		notes = append(notes, "emulated testbed: ours measures function, not performance")
	}
	disagree := false
	switch {
	case !ours.HasCI:
		notes = append(notes, "one repetition: no interval to judge the difference by")
	case paper < ours.CI95Low || paper > ours.CI95High:
		disagree = true
		notes = append(notes, fmt.Sprintf("disagrees: ours is %s× the paper's, which lies outside our 95%% interval (%s to %s)",
			ratioText(ours.Mean/paper), refNum(ours.CI95Low), refNum(ours.CI95High)))
	}
	return disagree, strings.Join(notes, "; ")
}

func ratioText(r float64) string {
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return refNum(r)
}

// notMeasured says why no row of the run matches ref.
func notMeasured(ref scenario.ReferenceFigure, s scenario.Scenario, rows []Summary) string {
	if i := slices.IndexFunc(s.Skipped, func(k scenario.SkippedMethod) bool { return k.Method == ref.Method }); i >= 0 {
		return fmt.Sprintf("not measured: the run skipped %s (%s)", ref.Method, s.Skipped[i].Reason)
	}
	if !slices.ContainsFunc(rows, func(r Summary) bool { return r.Method == ref.Method }) {
		return fmt.Sprintf("not measured: %s is not in this run's methods", ref.Method)
	}
	return fmt.Sprintf("not measured: no %s row of this run has the %s %s under this condition", ref.Method, ref.Test, ref.Metric)
}

// referenceFigure returns the id of the figure that draws ours for ref,
// when the report has it.
func referenceFigure(runID string, ref scenario.ReferenceFigure, r Summary, figures []string) string {
	var ids []string
	slug := baselineOf(r.Params).slug()
	switch ref.Test {
	case scenario.TestTCPStream:
		ids = append(ids, fmt.Sprintf("%s-throughput-time-%s-%s", runID, slugLabel(r.Label), slug))
	case scenario.TestTCPRR:
		ids = append(ids, fmt.Sprintf("%s-rtt-cdf-%s", runID, slug))
	case scenario.TestParallel:
		if ref.Metric == scenario.MetricPercentLineRate {
			ids = append(ids, fmt.Sprintf("%s-line-rate-%s", runID, groupSlug(r.Params)))
		}
		ids = append(ids, fmt.Sprintf("%s-parallel-throughput-%s", runID, groupSlug(r.Params)))
	case scenario.TestUDPSizes:
		name := map[string]string{
			scenario.MetricThroughput: "throughput", scenario.MetricPacketsPerSec: "throughput",
			scenario.MetricDelayP50: "delay", scenario.MetricJitter: "jitter", scenario.MetricLoss: "loss",
		}[ref.Metric]
		ids = append(ids, fmt.Sprintf("%s-udp-%s-%s", runID, name, slug))
	}
	for _, id := range ids {
		if slices.Contains(figures, id) {
			return id
		}
	}
	return ""
}

// what names a reference row's metric and condition for a reader.
func (r ReferenceRow) what() string {
	f := r.Ref
	var cond []string
	if f.Family != "" {
		cond = append(cond, f.Family)
	}
	if f.MTU != 0 {
		cond = append(cond, fmt.Sprintf("MTU %d", f.MTU))
	}
	if f.Offloads != "" {
		cond = append(cond, "offloads "+f.Offloads)
	}
	if f.Streams != 0 {
		cond = append(cond, streams(f.Streams))
	}
	if f.MSS != 0 {
		cond = append(cond, fmt.Sprintf("MSS %d", f.MSS))
	}
	if f.Direction != "" {
		cond = append(cond, f.Direction)
	}
	if f.Frame != 0 {
		cond = append(cond, fmt.Sprintf("%d-byte frames", f.Frame))
	}
	s := f.Test + " " + cmp.Or(metricNames[f.Metric], strings.ReplaceAll(f.Metric, "_", " "))
	if len(cond) > 0 {
		s += " (" + strings.Join(cond, ", ") + ")"
	}
	return s
}

// metricNames are the reference metrics as a reader names them.
var metricNames = map[string]string{
	scenario.MetricThroughput:      "throughput",
	scenario.MetricPeakThroughput:  "peak throughput over stream counts",
	scenario.MetricPercentNative:   "% of native",
	scenario.MetricPercentLineRate: "% of line rate",
	scenario.MetricP50RTT:          "median RTT",
	scenario.MetricP99RTT:          "p99 RTT",
	scenario.MetricPacketsPerSec:   "packets/s",
	scenario.MetricDelayP50:        "median one-way delay",
	scenario.MetricJitter:          "jitter",
	scenario.MetricLoss:            "loss",
}

// source is where the paper gives the number: setup and citation.
func (r ReferenceRow) source() string {
	s := r.Ref.Cite
	if r.Ref.Setup != "" {
		s = r.Ref.Setup + "; " + s
	}
	if r.Ref.Quote != "" {
		s += `: "` + r.Ref.Quote + `"`
	}
	return s
}

// ours renders our mean with its interval's half-width.
func (r ReferenceRow) ours() string {
	if r.Ours.N == 0 {
		return missing
	}
	s := refNum(r.Ours.Mean)
	if r.Ours.HasCI {
		s += " ± " + refNum(r.Ours.HalfWidth)
	}
	return s
}

func (r ReferenceRow) ratio() string {
	if r.Ours.N == 0 {
		return missing
	}
	return ratioText(r.Ratio)
}

// referenceLines are the text table's lines: one per reference row.
func referenceLines(refs References) []string {
	if len(refs.Rows) == 0 {
		return nil
	}
	out := []string{"the paper's numbers beside ours (" + refs.Source + "); ratio is ours over the paper's:"}
	for _, r := range refs.Rows {
		l := fmt.Sprintf("%s %s: paper %s %s, ours %s", r.Ref.Method, r.what(), paperNum(r.Paper), r.Unit, r.ours())
		if r.Row != "" && r.Row != r.Ref.Method {
			l += " (" + r.Row + ")"
		}
		l += ", ratio " + r.ratio()
		if r.Note != "" {
			l += "; " + r.Note
		}
		l += " [" + r.source() + "]"
		out = append(out, l)
	}
	return out
}

// writeReferences adds the reference lines to the text table.
func writeReferences(b *strings.Builder, run result.Run, rows []Summary) {
	if ls := referenceLines(BuildReferences(run, rows, nil)); len(ls) > 0 {
		b.WriteString("\n")
		writeWrapped(b, ls[:1], "")
		writeWrapped(b, ls[1:], "  ")
	}
}

// skippedNotes name the methods the run skipped (--skip-unavailable),
// each with its reason.
func skippedNotes(run result.Run) []string {
	var out []string
	for _, k := range runScenario(run).Skipped {
		out = append(out, fmt.Sprintf("Skipped method %s (--skip-unavailable), not measured: %s.", k.Method, strings.TrimSuffix(k.Reason, ".")))
	}
	return out
}

// referenceHTML renders the reference rows as a table of class
// "reference": with figure == "" every row, with a link to the figure
// that draws ours; otherwise the rows drawn in that figure, for its
// caption.
func referenceHTML(r BuiltRun, figure string) template.HTML {
	refs := r.References
	var rows []ReferenceRow
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
		fmt.Fprintf(&b, "<h3 id=\"%s-reference\">The paper's numbers beside ours</h3>\n<p class=\"muted\">Published figures from %s, as the scenario's reference block gives them; ratio is ours over the paper's; a note marks where the paper's value lies outside our 95%% confidence interval.</p>\n",
			e(r.Run.ID), e(refs.Source))
	}
	b.WriteString(`<div class="tw"><table class="reference"><thead><tr><th class="l">method</th><th class="l">figure</th><th>paper</th><th>ours</th><th>ratio</th><th class="l">note</th><th class="l">source</th>`)
	if figure == "" {
		b.WriteString(`<th class="l">drawn in</th>`)
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, row := range rows {
		cls := ""
		if row.Disagree {
			cls = ` class="disagree"`
		}
		what := row.what()
		if row.Row != "" && row.Row != row.Ref.Method {
			what += " — " + row.Row
		}
		fmt.Fprintf(&b, `<tr%s><td class="l">%s</td><td class="l">%s</td><td>%s %s</td><td>%s</td><td>%s</td><td class="l">%s</td><td class="l">%s</td>`,
			cls, e(row.Ref.Method), e(what), e(paperNum(row.Paper)), e(row.Unit), e(row.ours()), e(row.ratio()), e(row.Note), e(row.source()))
		if figure == "" {
			if row.Figure != "" {
				fmt.Fprintf(&b, `<td class="l"><a href="#%s">figure</a></td>`, e(row.Figure))
			} else {
				b.WriteString(`<td class="l">` + missing + `</td>`)
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table></div>\n")
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

// paperNum writes a published value as the paper gives it.
func paperNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
