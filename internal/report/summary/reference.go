package summary

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/bed/kind"
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
	// Datapath is where our row's packets were processed (Summary.Datapath).
	Datapath string `json:"datapath,omitempty"`
	// PaperNative is the paper's native figure for the same setup and
	// condition, in Unit; 0 when the paper gives none.
	PaperNative float64 `json:"paper_native,omitempty"`
	// PaperPercent is Paper as % of PaperNative; OursPercent is ours as
	// % of our native under the same condition, its interval from both
	// intervals (relative half-widths added in quadrature). For a metric
	// that is a percentage already (% of native, % of line rate), both
	// are the figures themselves. Zero when either native is missing.
	PaperPercent float64 `json:"paper_percent,omitempty"`
	OursPercent  Figure  `json:"ours_percent,omitzero"`
	// ShapeRatio is OursPercent.Mean / PaperPercent: 1 when the method
	// stands to native here as it does in the paper.
	ShapeRatio float64 `json:"shape_ratio,omitempty"`
	// Judged is what the verdict compares: JudgedRelative (the paper's %
	// against our % interval), JudgedAbsolute (the paper's value against
	// our interval, only on a testbed of the paper's class), or empty (no
	// verdict: another testbed class, another implementation, no native
	// or no interval; Note says which).
	Judged string `json:"judged,omitempty"`
	// Disagree is true when the judged value of the paper lies outside
	// the 95% confidence interval of ours.
	Disagree bool `json:"disagree,omitempty"`
	// Note explains the verdict, or why there is none, or a missing
	// measurement.
	Note string `json:"note,omitempty"`
	// Figure is the id of the report figure that draws ours ("" when no
	// figure does).
	Figure string `json:"figure,omitempty"`
}

// What a reference row's verdict compares (ReferenceRow.Judged).
const (
	JudgedRelative = "relative"
	JudgedAbsolute = "absolute"
)

// References are the scenario's published figures beside the run's.
type References struct {
	Source string         `json:"source"`
	Rows   []ReferenceRow `json:"rows"`
	// Rankings set the paper's order of methods (by % of native) beside
	// ours, per setup and condition where the paper ranks three or more.
	Rankings []string `json:"rankings,omitempty"`
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
	v := VaryingParams(rows)
	class := testbedClass(run)
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
			r.Row, r.Key, r.Ours = RowName(m.row, v), m.row.Key, scaleFigure(m.fig, 1/factor, ref.Unit)
			if ref.Metric == scenario.MetricPercentNative {
				// Our share of native with native's spread in its interval,
				// as the relative rows have it.
				tref := ref
				tref.Metric = scenario.MetricThroughput
				if f := shareOfNative(referenceValue(tref, m.row), ourNative(tref, m.row, rows, 1)); f.N > 0 {
					f.Unit = ref.Unit
					r.Ours = f
				}
			}
			if r.Row == "" {
				r.Row = m.row.Label
			}
			r.Ratio = r.Ours.Mean / paper
			r.Datapath = m.row.Datapath
			r.PaperNative = paperNative(ref, s.Reference.Figures)
			r.PaperPercent, r.OursPercent = relative(ref, r.PaperNative, r.Ours, ourNative(ref, m.row, rows, factor))
			if r.PaperPercent > 0 && r.OursPercent.N > 0 {
				r.ShapeRatio = r.OursPercent.Mean / r.PaperPercent
			}
			r.Judged, r.Disagree, r.Note = judgeRow(r, class, m.row.Emulated)
			r.Figure = referenceFigure(run.ID, ref, m.row, figures)
			out.Rows = append(out.Rows, r)
		}
	}
	out.Rankings = rankings(out.Rows)
	return out
}

// testbedClass is the class of the run's testbed, as reference figures
// name theirs (its entry's Class: namespaces on this machine, or VMs on
// it; records without a testbed ran on the default one); "" where it
// cannot be told (ssh hosts, a cluster).
func testbedClass(run result.Run) string {
	e, err := kind.Lookup(run.Testbed)
	if err != nil {
		return ""
	}
	return e.Class
}

// testbedNames are the testbed classes as a reader names them.
var testbedNames = map[string]string{
	scenario.TestbedWANVM:      "VMs in two data centres over a WAN",
	scenario.TestbedDCVM:       "VMs in one data centre",
	scenario.TestbedBareMetal:  "bare-metal servers",
	scenario.TestbedLocalVM:    "VMs on one host",
	scenario.TestbedOneMachine: "one machine's veth",
	"":                         "a testbed of unstated class",
}

// percentMetric says whether a metric is a share already, which carries
// over between testbeds as it is.
func percentMetric(m string) bool {
	return m == scenario.MetricPercentNative || m == scenario.MetricPercentLineRate
}

// shapeMetric says whether a metric is relative already (a share or a
// gain), so that it is judged as it is, whatever the testbeds.
func shapeMetric(m string) bool { return percentMetric(m) || m == scenario.MetricMTUGain }

// paperNative is the paper's native figure for ref's setup and
// condition: ref's own Native, else the block's native figure with the
// same setup, test, metric and condition; 0 when the paper gives none.
func paperNative(ref scenario.ReferenceFigure, all []scenario.ReferenceFigure) float64 {
	if ref.Native > 0 {
		return ref.Native
	}
	if shapeMetric(ref.Metric) {
		return 0
	}
	for _, f := range all {
		if f.Method != NativeMethod || f.Setup != ref.Setup || f.Test != ref.Test || f.Metric != ref.Metric ||
			f.Family != ref.Family || f.MTU != ref.MTU || f.Offloads != ref.Offloads || f.Streams != ref.Streams ||
			f.MSS != ref.MSS || f.Direction != ref.Direction || f.Frame != ref.Frame {
			continue
		}
		if fv, _ := f.BaseValue(); fv > 0 {
			rv, _ := ref.BaseValue()
			return fv * ref.Value / rv // in ref's unit
		}
	}
	return 0
}

// ourNative is our native's figure for ref's metric under the condition
// of row, in ref's unit (1/factor of the base unit); N == 0 when the run
// has none.
func ourNative(ref scenario.ReferenceFigure, row Summary, rows []Summary, factor float64) Figure {
	if shapeMetric(ref.Metric) {
		return Figure{}
	}
	nref := ref
	nref.Method = NativeMethod
	k := BaselineOf(row.Params)
	peak := ref.Metric == scenario.MetricPeakThroughput
	if peak {
		k.Streams = 0
	}
	for _, m := range referenceMatches(nref, rows) {
		nk := BaselineOf(m.row.Params)
		if peak {
			nk.Streams = 0
		}
		if nk == k {
			return scaleFigure(m.fig, 1/factor, ref.Unit)
		}
	}
	return Figure{}
}

// relative is the paper's value as % of the paper's native and ours as %
// of ours, the interval of ours from the intervals of both of our
// figures. For a metric that is a share already, both are the values as
// they are.
func relative(ref scenario.ReferenceFigure, paperNative float64, ours, native Figure) (float64, Figure) {
	if percentMetric(ref.Metric) {
		return ref.Value, ours
	}
	if paperNative <= 0 {
		return 0, Figure{}
	}
	f := shareOfNative(ours, native)
	if f.N == 0 {
		return 0, f
	}
	return 100 * ref.Value / paperNative, f
}

// shareOfNative is ours as % of native, its interval from both intervals
// (relative half-widths added in quadrature); N == 0 without either.
func shareOfNative(ours, native Figure) Figure {
	if native.N == 0 || native.Mean <= 0 || ours.N == 0 {
		return Figure{}
	}
	pct := 100 * ours.Mean / native.Mean
	f := Figure{Unit: UnitPercent, Summary: stats.Summary{N: ours.N, Mean: pct, HasCI: ours.HasCI && native.HasCI, CV: ours.CV}}
	if f.HasCI && ours.Mean > 0 {
		hw := pct * math.Hypot(ours.HalfWidth/ours.Mean, native.HalfWidth/native.Mean)
		f.HalfWidth, f.CI95Low, f.CI95High = hw, pct-hw, pct+hw
		f.StdDev = pct * math.Hypot(ours.StdDev/ours.Mean, native.StdDev/native.Mean)
	}
	return f
}

// rankings set the paper's order of the methods beside ours, per setup,
// test, metric and condition where the paper gives three or more methods
// relative to native (native among them at 100%).
func rankings(rows []ReferenceRow) []string {
	type group struct {
		key  string
		rows []ReferenceRow
	}
	var groups []*group
	idx := map[string]*group{}
	for _, r := range rows {
		if r.PaperPercent <= 0 || r.OursPercent.N == 0 || r.Ref.Metric == scenario.MetricPercentLineRate {
			continue
		}
		f := r.Ref
		metric := f.Metric
		if metric == scenario.MetricPercentNative {
			metric = scenario.MetricThroughput
		}
		k := fmt.Sprintf("%s|%s|%s|%s|%d|%s|%d|%d|%s|%d", f.Setup, f.Test, metric, f.Family, f.MTU, f.Offloads, f.Streams, f.MSS, f.Direction, f.Frame)
		g, ok := idx[k]
		if !ok {
			g = &group{key: k}
			idx[k] = g
			groups = append(groups, g)
		}
		if !slices.ContainsFunc(g.rows, func(o ReferenceRow) bool { return o.Ref.Method == r.Ref.Method }) {
			g.rows = append(g.rows, r)
		}
	}
	var out []string
	for _, g := range groups {
		if len(g.rows) < 2 {
			continue
		}
		lower := g.rows[0].Ref.Metric == scenario.MetricP50RTT || g.rows[0].Ref.Metric == scenario.MetricP99RTT ||
			g.rows[0].Ref.Metric == scenario.MetricDelayP50 || g.rows[0].Ref.Metric == scenario.MetricJitter
		// order joins the methods by val, best first, tied ones with "=".
		order := func(val func(ReferenceRow) float64, name func(ReferenceRow) string) string {
			rs := slices.Clone(g.rows)
			slices.SortStableFunc(rs, func(a, b ReferenceRow) int {
				if lower {
					return cmp.Compare(val(a), val(b))
				}
				return cmp.Compare(val(b), val(a))
			})
			var b strings.Builder
			for i, r := range rs {
				switch {
				case i == 0:
				case val(r) == val(rs[i-1]):
					b.WriteString(" = ")
				default:
					b.WriteString(" > ")
				}
				b.WriteString(name(r))
			}
			return b.String()
		}
		method := func(r ReferenceRow) string { return r.Ref.Method }
		ours := func(r ReferenceRow) float64 { return r.OursPercent.Mean }
		paper := order(func(r ReferenceRow) float64 { return r.PaperPercent }, method)
		// The orders agree when every pair the paper tells apart comes in
		// the same order in ours; else the first pair that does not.
		swap := ""
		for i, a := range g.rows {
			for _, b := range g.rows[i+1:] {
				if swap != "" || a.PaperPercent == b.PaperPercent || (a.PaperPercent > b.PaperPercent) == (ours(a) > ours(b)) {
					continue
				}
				hi, lo := a, b
				if (b.PaperPercent > a.PaperPercent) != lower {
					hi, lo = b, a
				}
				swap = fmt.Sprintf(": another order (the paper puts %s above %s, ours below)", hi.Ref.Method, lo.Ref.Method)
			}
		}
		better := "best first"
		if lower {
			better = "lowest first"
		}
		line := fmt.Sprintf("ranking by %s relative to native, %s (%s): the paper's %s, ours %s",
			g.rows[0].What(), better, cmp.Or(g.rows[0].Ref.Setup, "the paper's setup"), paper,
			order(ours, func(r ReferenceRow) string { return WithDatapath(r.Ref.Method, r.Datapath) }))
		line += cmp.Or(swap, ": the same order")
		out = append(out, line)
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
	if ref.Metric == scenario.MetricMTUGain {
		return gainMatches(ref, rows)
	}
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
	idx := map[BaselineKey]int{}
	for _, m := range out {
		k := BaselineOf(m.row.Params)
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

// gainMatches are, for an mtu_gain, the rows of ref's method at ref's
// MTU, each with its throughput over that of the row that differs only in
// being at ref's base MTU; the interval from both intervals (relative
// half-widths added in quadrature).
func gainMatches(ref scenario.ReferenceFigure, rows []Summary) []refMatch {
	var out []refMatch
	for _, r := range rows {
		if r.Method != ref.Method || !conditionMatches(ref, r.Params) || r.Throughput.N == 0 {
			continue
		}
		k := BaselineOf(r.Params)
		k.UnderlayMTU = ref.BaseMTU
		i := slices.IndexFunc(rows, func(b Summary) bool { return b.Label == r.Label && BaselineOf(b.Params) == k })
		if i < 0 || rows[i].Throughput.N == 0 || rows[i].Throughput.Mean <= 0 {
			continue
		}
		hi, lo := r.Throughput, rows[i].Throughput
		g := hi.Mean / lo.Mean
		f := Figure{Unit: "x", Summary: stats.Summary{N: min(hi.N, lo.N), Mean: g, HasCI: hi.HasCI && lo.HasCI}}
		if f.HasCI {
			hw := g * math.Hypot(hi.HalfWidth/hi.Mean, lo.HalfWidth/lo.Mean)
			f.HalfWidth, f.CI95Low, f.CI95High = hw, g-hw, g+hw
			f.StdDev = g * math.Hypot(hi.StdDev/hi.Mean, lo.StdDev/lo.Mean)
		}
		out = append(out, refMatch{r, f})
	}
	return out
}

// conditionMatches reports whether p satisfies every condition ref gives.
func conditionMatches(ref scenario.ReferenceFigure, p result.Params) bool {
	offloads := OnOff(p.Offloads)
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
// Num3 above.
func refNum(v float64) string {
	if v != 0 && v < 1 && v > -1 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return Num3(v)
}

// judgeRow gives a measured reference row its verdict: what it compares,
// whether the paper's value lies outside our 95% interval, and the note
// for the reader. Another implementation than the paper's is not judged;
// a share of native (or of the line rate) is judged whatever the
// testbeds; an absolute value only on a testbed of the paper's class.
func judgeRow(r ReferenceRow, class string, emulated bool) (string, bool, string) {
	var notes []string
	if emulated {
		notes = append(notes, "emulated testbed: ours measures function, not performance")
	}
	f := r.Ref
	if f.Implementation != "" && r.Datapath != "" && f.Implementation != r.Datapath {
		notes = append(notes, fmt.Sprintf("not judged: ours ran on the %s data path, the paper's on the %s one", r.Datapath, f.Implementation))
		return "", false, strings.Join(notes, "; ")
	}
	judged, paper, ours := "", 0.0, Figure{}
	switch {
	case f.Metric == scenario.MetricMTUGain:
		judged, paper, ours = JudgedRelative, r.Paper, r.Ours
	case f.Method != NativeMethod && r.PaperPercent > 0 && r.OursPercent.N > 0:
		judged, paper, ours = JudgedRelative, r.PaperPercent, r.OursPercent
	case f.Testbed != "" && f.Testbed == class:
		judged, paper, ours = JudgedAbsolute, r.Paper, r.Ours
	case f.Method == NativeMethod:
		notes = append(notes, fmt.Sprintf("native: the baseline of the relative rows; absolute values not judged between %s and %s",
			testbedNames[f.Testbed], testbedNames[class]))
		return "", false, strings.Join(notes, "; ")
	case r.PaperNative == 0 && !shapeMetric(f.Metric):
		notes = append(notes, fmt.Sprintf("not judged: the paper gives no native for this setup and condition, and absolute values are not judged between %s and %s",
			testbedNames[f.Testbed], testbedNames[class]))
		return "", false, strings.Join(notes, "; ")
	default:
		notes = append(notes, "not judged: this run has no native under this condition to set ours relative to")
		return "", false, strings.Join(notes, "; ")
	}
	disagree := false
	what := "ours"
	if judged == JudgedRelative {
		what = "ours relative to native"
	}
	switch {
	case !ours.HasCI:
		notes = append(notes, "one repetition: no interval to judge the difference by")
	case paper < ours.CI95Low || paper > ours.CI95High:
		disagree = true
		notes = append(notes, fmt.Sprintf("%s disagrees: %s is %s× the paper's, which lies outside our 95%% interval (%s to %s)",
			judged, what, ratioText(ours.Mean/paper), refNum(ours.CI95Low), refNum(ours.CI95High)))
	default:
		notes = append(notes, fmt.Sprintf("%s agrees: %s is %s× the paper's, which lies inside our 95%% interval (%s to %s)",
			judged, what, ratioText(ours.Mean/paper), refNum(ours.CI95Low), refNum(ours.CI95High)))
	}
	return judged, disagree, strings.Join(notes, "; ")
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
	slug := BaselineOf(r.Params).Slug()
	switch ref.Test {
	case scenario.TestTCPStream:
		if ref.Metric == scenario.MetricMTUGain {
			p := r.Params
			ids = append(ids, fmt.Sprintf("%s-mtu-%s-offloads-%s-p%d", runID, p.Family, OnOff(p.Offloads), p.Streams))
		}
		ids = append(ids, fmt.Sprintf("%s-throughput-time-%s-%s", runID, SlugLabel(r.Label), slug))
	case scenario.TestTCPRR:
		ids = append(ids, fmt.Sprintf("%s-rtt-cdf-%s", runID, slug))
	case scenario.TestParallel:
		if ref.Metric == scenario.MetricPercentLineRate {
			ids = append(ids, fmt.Sprintf("%s-line-rate-%s", runID, GroupSlug(r.Params)))
		}
		ids = append(ids, fmt.Sprintf("%s-parallel-throughput-%s", runID, GroupSlug(r.Params)))
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

// What names a reference row's metric and condition for a reader.
func (r ReferenceRow) What() string {
	f := r.Ref
	var cond []string
	if f.Family != "" {
		cond = append(cond, f.Family)
	}
	switch {
	case f.BaseMTU != 0:
		cond = append(cond, fmt.Sprintf("MTU %d over MTU %d", f.MTU, f.BaseMTU))
	case f.MTU != 0:
		cond = append(cond, fmt.Sprintf("MTU %d", f.MTU))
	}
	if f.Offloads != "" {
		cond = append(cond, "offloads "+f.Offloads)
	}
	if f.Streams != 0 {
		cond = append(cond, Streams(f.Streams))
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
	scenario.MetricMTUGain:         "gain from the larger MTU",
}

// Source is where the paper gives the number: setup and citation.
func (r ReferenceRow) Source() string {
	s := r.Ref.Cite
	if r.Ref.Setup != "" {
		s = r.Ref.Setup + "; " + s
	}
	if r.Ref.Quote != "" {
		s += `: "` + r.Ref.Quote + `"`
	}
	return s
}

// OursText renders our mean with its interval's half-width.
func (r ReferenceRow) OursText() string {
	if r.Ours.N == 0 {
		return Missing
	}
	s := refNum(r.Ours.Mean)
	if r.Ours.HasCI {
		s += " ± " + refNum(r.Ours.HalfWidth)
	}
	return s
}

// RatioText renders ours over the paper's absolute value; Missing when
// we measured nothing.
func (r ReferenceRow) RatioText() string {
	if r.Ours.N == 0 {
		return Missing
	}
	return ratioText(r.Ratio)
}

// paperPercent renders the paper's value relative to its native.
func (r ReferenceRow) paperPercent() string {
	switch {
	case r.PaperPercent > 0:
		return refNum(r.PaperPercent) + "%"
	case r.Ref.Method != NativeMethod && r.Ours.N > 0:
		return "no native in the paper"
	}
	return Missing
}

// oursPercent renders ours relative to our native, with its interval.
func (r ReferenceRow) oursPercent() string {
	f := r.OursPercent
	if f.N == 0 {
		return Missing
	}
	s := refNum(f.Mean)
	if f.HasCI {
		s += " ± " + refNum(f.HalfWidth)
	}
	return s + "%"
}

// shape renders ShapeRatio.
func (r ReferenceRow) shape() string {
	if r.ShapeRatio == 0 {
		return Missing
	}
	return ratioText(r.ShapeRatio)
}

// Percents renders the paper's and our % of native side by side; a
// native row is the 100% both are relative to.
func (r ReferenceRow) Percents() string {
	switch {
	case r.Ref.Method == NativeMethod && !percentMetric(r.Ref.Metric):
		return "the 100%"
	case r.PaperPercent == 0 && r.OursPercent.N == 0:
		return Missing
	}
	return r.paperPercent() + " / " + r.oursPercent()
}

// Method names the reference row's method, with our data path where the
// method has several ("ovs-geneve (netdev)"), and the paper's where it
// says it.
func (r ReferenceRow) Method() string {
	if p := r.Ref.Implementation; p != "" && r.Datapath != "" && p != r.Datapath {
		return r.Ref.Method + " (" + r.Datapath + "; the paper's: " + p + ")"
	}
	return WithDatapath(r.Ref.Method, r.Datapath)
}

// referenceLines are the text table's lines: one per reference row.
func referenceLines(refs References) []string {
	if len(refs.Rows) == 0 {
		return nil
	}
	out := []string{"the paper's numbers beside ours (" + refs.Source + "); each as % of its own native, and the ratio of ours over the paper's " +
		"(relative: of the two %; absolute: of the values, judged only on a testbed of the paper's class):"}
	for _, r := range refs.Rows {
		l := fmt.Sprintf("%s %s: paper %s %s", r.Method(), r.What(), PaperNum(r.Paper), r.Unit)
		if r.PaperPercent > 0 && r.Ref.Method != NativeMethod && !shapeMetric(r.Ref.Metric) {
			l += " (" + r.paperPercent() + " of its native)"
		}
		l += ", ours " + r.OursText()
		if r.OursPercent.N > 0 && r.Ref.Method != NativeMethod && !shapeMetric(r.Ref.Metric) {
			l += " (" + r.oursPercent() + " of ours)"
		}
		if r.Row != "" && r.Row != r.Ref.Method && r.Row != WithDatapath(r.Ref.Method, r.Datapath) {
			l += " (" + r.Row + ")"
		}
		switch {
		case shapeMetric(r.Ref.Metric):
			l += ", relative " + r.RatioText()
		case r.ShapeRatio > 0 && r.Ref.Method != NativeMethod:
			l += ", relative " + r.shape() + ", absolute " + r.RatioText()
		default:
			l += ", absolute " + r.RatioText()
		}
		if r.Note != "" {
			l += "; " + r.Note
		}
		l += " [" + r.Source() + "]"
		out = append(out, l)
	}
	return append(out, refs.Rankings...)
}

// writeReferences adds the reference lines to the text table.
func writeReferences(b *strings.Builder, run result.Run, rows []Summary) {
	if ls := referenceLines(BuildReferences(run, rows, nil)); len(ls) > 0 {
		b.WriteString("\n")
		WriteWrapped(b, ls[:1], "")
		WriteWrapped(b, ls[1:], "  ")
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

// PaperNum writes a published value as the paper gives it.
func PaperNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
