// Package compare is the comparison of two runs: per common cell and
// figure, Welch's t-test and a verdict, and the outcome the CLI maps to
// its exit code (regression, inconclusive, lost cells, nothing in common).
//
// Each test has a primary figure (throughput for tcp_stream, the p50
// round-trip time for tcp_rr, the time to connect and to recover for
// those tests): primary figures alone decide the outcome, and the other
// (secondary) figures are shown beside them without ever turning a
// primary loss into "better". A change larger than the threshold that the
// repetitions cannot tell from noise is inconclusive, never "no change",
// and carries the repetitions per run it would take, at the observed
// spread, to decide it.
package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
	"gonum.org/v1/gonum/stat/distuv"
)

// Verdicts of a comparison.
const (
	VerdictBetter       = "better"
	VerdictWorse        = "worse"
	VerdictNoChange     = "no significant change"
	VerdictInconclusive = "inconclusive"
	VerdictNotCompared  = "not comparable"
	DefaultConfidence   = 0.95
	DefaultThresholdPct = 5.0
)

// CompareOptions adjust Compare. The zero value means 95% confidence and a
// 5% threshold.
type CompareOptions struct {
	// Confidence is the two-sided confidence level of the Welch t-test
	// (0.95: a change is significant when p < 0.05).
	Confidence float64
	// ThresholdPercent is the size of a significant worsening, in percent
	// of run A's mean, above which a cell counts as a regression.
	ThresholdPercent float64
	// AllowMissing accepts cells that were ok in run A and are missing or
	// failed in run B (a matrix changed on purpose): they are still listed,
	// but the outcome no longer says lost.
	AllowMissing bool
	// Strict makes a primary figure measured on a busy background or
	// unstable (CV above 10%) in either run fail the gate as
	// inconclusive; without it the verdict only says so.
	Strict bool
}

func (o CompareOptions) withDefaults() CompareOptions {
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = DefaultConfidence
	}
	if o.ThresholdPercent <= 0 {
		o.ThresholdPercent = DefaultThresholdPct
	}
	return o
}

// Comparison is run B measured against run A, cell by cell.
type Comparison struct {
	Schema           string  `json:"schema"`
	RunA             string  `json:"run_a"`
	RunB             string  `json:"run_b"`
	Test             string  `json:"test"`
	Confidence       float64 `json:"confidence"`
	ThresholdPercent float64 `json:"threshold_percent"`
	// Rows has one entry per common cell and figure.
	Rows []CompareRow `json:"rows"`
	// OnlyA and OnlyB name the cells present in only one run.
	OnlyA []string `json:"only_in_a"`
	OnlyB []string `json:"only_in_b"`
	// Lost are the cells with at least one ok repetition in run A that
	// are missing from run B or have no ok repetition there.
	Lost []LostCell `json:"lost"`
	// AllowMissing is true when lost cells were accepted.
	AllowMissing bool `json:"allow_missing"`
	// Strict is true when doubtful primary figures fail the gate.
	Strict bool `json:"strict"`
	// Counts of verdicts over the primary rows, which decide the outcome.
	Better       int `json:"better"`
	Worse        int `json:"worse"`
	NoChange     int `json:"no_significant_change"`
	Inconclusive int `json:"inconclusive"`
	NotCompared  int `json:"not_comparable"`
	// Secondary counts the verdicts of the secondary rows, shown but
	// never deciding.
	Secondary VerdictCounts `json:"secondary"`
	// Regressions counts primary rows that are worse by more than the
	// threshold.
	Regressions int `json:"regressions"`
	// Doubts says which runs' primary figures were measured on a busy
	// background or are unstable; with Strict they fail the gate.
	Doubts []string `json:"doubts"`
	// Verdict sums the comparison up in one phrase.
	Verdict string `json:"verdict"`
	// Outcome is what a gate acts on: one of the Outcome constants.
	Outcome string `json:"outcome"`
}

// VerdictCounts counts rows by verdict.
type VerdictCounts struct {
	Better       int `json:"better"`
	Worse        int `json:"worse"`
	NoChange     int `json:"no_significant_change"`
	Inconclusive int `json:"inconclusive"`
	NotCompared  int `json:"not_comparable"`
}

func (v *VerdictCounts) add(verdict string) {
	switch verdict {
	case VerdictBetter:
		v.Better++
	case VerdictWorse:
		v.Worse++
	case VerdictNoChange:
		v.NoChange++
	case VerdictInconclusive:
		v.Inconclusive++
	default:
		v.NotCompared++
	}
}

// Outcomes of a comparison, from the gate's point of view. tunbench
// compare exits 0 for OutcomePass, 2 for OutcomeRegression, 3 for
// OutcomeNoCommon, 4 for OutcomeLost and 6 for OutcomeInconclusive.
const (
	// OutcomePass: no figure regressed and no cell was lost (or lost
	// cells were allowed).
	OutcomePass = "pass"
	// OutcomeRegression: a figure is significantly worse by more than the
	// threshold.
	OutcomeRegression = "regression"
	// OutcomeNoCommon: the runs share no cell, so nothing was compared.
	OutcomeNoCommon = "no common cells"
	// OutcomeLost: a cell ok in run A is missing or failed in run B. It
	// outranks a regression: a method that stopped working is the worst one.
	OutcomeLost = "lost"
	// OutcomeInconclusive: no primary figure regressed, but one changed by
	// more than the threshold without the repetitions being able to tell
	// the change from noise; or, with Strict, a primary figure was measured
	// on a busy background or is unstable.
	OutcomeInconclusive = "inconclusive"
)

// LostCell is a cell that was ok in run A and is not in run B.
type LostCell struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	// Status is "missing" (run B has no such cell) or "failed" (run B has
	// it, with no ok repetition).
	Status string `json:"status"`
	// Reason is run B's first error for a failed cell.
	Reason string `json:"reason,omitempty"`
}

// CompareSchema names the JSON document of a comparison.
const CompareSchema = "tunbench.compare/v1"

// CompareRow is one figure of one cell in both runs.
type CompareRow struct {
	Key    string `json:"key"`
	Name   string `json:"name"`
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	// HigherIsBetter is true for throughput and Gbit/s per core, false for
	// RTTs.
	HigherIsBetter bool `json:"higher_is_better"`
	// Primary is true for a test's primary figure, which decides the
	// outcome; secondary figures are shown, never deciding.
	Primary bool    `json:"primary"`
	NA      int     `json:"n_a"`
	NB      int     `json:"n_b"`
	MeanA   float64 `json:"mean_a"`
	MeanB   float64 `json:"mean_b"`
	StdDevA float64 `json:"stddev_a"`
	StdDevB float64 `json:"stddev_b"`
	// DeltaPercent is 100 * (MeanB - MeanA) / MeanA.
	DeltaPercent float64 `json:"delta_percent"`
	// PValue is the two-sided p-value of Welch's t-test (1 when both runs
	// have no spread and equal means); -1 when not compared.
	PValue  float64 `json:"p_value"`
	Verdict string  `json:"verdict"`
	// Regression is true when the figure is primary, the verdict is worse
	// and the change exceeds the threshold.
	Regression bool `json:"regression"`
	// RepetitionsNeeded is, for an inconclusive row, how many repetitions
	// per run a t-test at the comparison's confidence would need to find
	// the observed change with 80% power at the observed spread; -1 when
	// more than MaxRepetitions, 0 when not computed (one repetition: the
	// spread is unknown).
	RepetitionsNeeded int `json:"repetitions_needed,omitempty"`
	// Busy and Unstable say whether the figure was measured on a busy
	// background (either run) or has a CV above 10% (either run).
	Busy     bool `json:"busy,omitempty"`
	Unstable bool `json:"unstable,omitempty"`
	// Note says why a row was not compared, or what to distrust (unstable,
	// busy background) in either run.
	Note string `json:"note,omitempty"`
}

// MaxRepetitions is the most repetitions a run takes (tunbench run
// --reps); a change needing more is reported as needing more than this.
const MaxRepetitions = 1000

type metric struct {
	name   string
	unit   string
	higher bool
	// primary marks the figure a test is judged by.
	primary bool
	get     func(summary.Summary) summary.Figure
}

var compareMetrics = []metric{
	// tcp_stream (and parallel): throughput; tcp_rr: the median RTT.
	{"throughput", summary.UnitGbps, true, true, func(s summary.Summary) summary.Figure { return s.Throughput }},
	{"p50 rtt", summary.UnitMicros, false, true, func(s summary.Summary) summary.Figure { return s.P50RTT }},
	{"p99 rtt", summary.UnitMicros, false, false, func(s summary.Summary) summary.Figure { return s.P99RTT }},
	{"gbit/s per core", summary.UnitGbpsPerCore, true, false, func(s summary.Summary) summary.Figure { return s.GbpsPerCore }},
	// The connect and recover tests: lower is better.
	{"connect", summary.UnitSeconds, false, true, connectFigure(func(c *summary.ConnectSummary) summary.Figure { return c.Total })},
	{"recover", summary.UnitSeconds, false, true, connectFigure(func(c *summary.ConnectSummary) summary.Figure { return c.Recovery })},
	{"recover lost", summary.UnitRequests, false, false, connectFigure(func(c *summary.ConnectSummary) summary.Figure { return c.Lost })},
	{"rekey outage", summary.UnitSeconds, false, false, connectFigure(func(c *summary.ConnectSummary) summary.Figure { return c.RekeyOutage })},
	// The tunnels dimension: set-up of the N tunnels and the reconf
	// test's blocked time, lower is better, secondary (shown, never
	// deciding).
	{"set-up", summary.UnitSeconds, false, false, scaleFigure(func(s *summary.ScaleSummary) summary.Figure { return s.Setup })},
	{"reconf blocked", summary.UnitSeconds, false, false, scaleFigure(func(s *summary.ScaleSummary) summary.Figure { return s.ReconfBlocked })},
}

// scaleFigure reads a figure of the tunnels dimension; none when the row
// has no scale or reconf record.
func scaleFigure(get func(*summary.ScaleSummary) summary.Figure) func(summary.Summary) summary.Figure {
	return func(s summary.Summary) summary.Figure {
		if s.Scale == nil {
			return summary.Figure{}
		}
		return get(s.Scale)
	}
}

// connectFigure reads a figure of the connect and recover tests; none
// when the row has no such test.
func connectFigure(get func(*summary.ConnectSummary) summary.Figure) func(summary.Summary) summary.Figure {
	return func(s summary.Summary) summary.Figure {
		if s.Tests == nil || s.Tests.Connect == nil {
			return summary.Figure{}
		}
		return get(s.Tests.Connect)
	}
}

// Compare measures run B against run A: for every cell (key) in both runs
// and every figure measured in both, the means, the change in percent and
// a verdict from Welch's t-test at the stated confidence, never from the
// raw means alone.
func Compare(runA result.Run, cellsA []result.Cell, runB result.Run, cellsB []result.Cell, opt CompareOptions) Comparison {
	opt = opt.withDefaults()
	rowsA, rowsB := summary.Aggregate(runA, cellsA), summary.Aggregate(runB, cellsB)
	v := summary.VaryingParams(append(append([]summary.Summary{}, rowsA...), rowsB...))
	inB := map[string]summary.Summary{}
	for _, r := range rowsB {
		inB[r.Key] = r
	}
	inA := map[string]bool{}
	c := Comparison{
		Schema: CompareSchema, RunA: runA.ID, RunB: runB.ID, Test: "welch-t",
		Confidence: opt.Confidence, ThresholdPercent: opt.ThresholdPercent,
		Rows: []CompareRow{}, OnlyA: []string{}, OnlyB: []string{}, Lost: []LostCell{},
		AllowMissing: opt.AllowMissing, Strict: opt.Strict, Doubts: []string{},
	}
	common := 0
	for _, a := range rowsA {
		b, ok := inB[a.Key]
		if ok && !sameDatapath(a, b) {
			// The same method and parameters on another data path (ovs
			// on netdev in one run, on the kernel's in the other) is
			// another cell: each is listed as only in its run, and
			// neither counts as lost.
			c.OnlyA = append(c.OnlyA, summary.RowName(a, v))
			continue
		}
		inA[a.Key] = true
		if !ok {
			c.OnlyA = append(c.OnlyA, summary.RowName(a, v))
			if a.OK > 0 {
				c.Lost = append(c.Lost, LostCell{Key: a.Key, Name: summary.RowName(a, v), Status: "missing"})
			}
			continue
		}
		common++
		if a.OK > 0 && b.OK == 0 {
			c.Lost = append(c.Lost, LostCell{Key: a.Key, Name: summary.RowName(a, v), Status: "failed", Reason: firstProblem(b)})
		}
		for _, m := range compareMetrics {
			fa, fb := m.get(a), m.get(b)
			if fa.N == 0 && fb.N == 0 {
				continue
			}
			row := compareFigure(fa, fb, m, opt)
			row.Key, row.Name = a.Key, summary.RowName(a, v)
			row.Busy = a.BackgroundBusy || b.BackgroundBusy
			row.Unstable = fa.Unstable() || fb.Unstable()
			row.Note = joinNotes(row.Note, doubt("A", a, fa), doubt("B", b, fb))
			c.Rows = append(c.Rows, row)
		}
	}
	for _, b := range rowsB {
		if !inA[b.Key] {
			c.OnlyB = append(c.OnlyB, summary.RowName(b, v))
		}
	}
	var primary VerdictCounts
	var widest *CompareRow // the inconclusive primary row needing most repetitions
	for i, r := range c.Rows {
		if !r.Primary {
			c.Secondary.add(r.Verdict)
			continue
		}
		primary.add(r.Verdict)
		if r.Regression {
			c.Regressions++
		}
		if r.Verdict == VerdictInconclusive && (widest == nil || needsMore(r.RepetitionsNeeded, widest.RepetitionsNeeded)) {
			widest = &c.Rows[i]
		}
	}
	c.Better, c.Worse, c.NoChange, c.Inconclusive, c.NotCompared =
		primary.Better, primary.Worse, primary.NoChange, primary.Inconclusive, primary.NotCompared
	c.Doubts = doubts(c.Rows)
	c.Outcome = OutcomePass
	switch {
	case common == 0:
		// Every cell of run A is only in run A: listed there, not as lost.
		c.Verdict, c.Outcome, c.Lost = OutcomeNoCommon, OutcomeNoCommon, []LostCell{}
		return c
	case len(c.Lost) > 0 && !opt.AllowMissing:
		c.Outcome = OutcomeLost
	case c.Regressions > 0:
		c.Outcome = OutcomeRegression
	case c.Inconclusive > 0 || (opt.Strict && len(c.Doubts) > 0):
		c.Outcome = OutcomeInconclusive
	}
	switch {
	case len(c.Lost) > 0 && !opt.AllowMissing:
		c.Verdict = fmt.Sprintf("lost: %d cell(s) ok in run A are missing or failed in run B", len(c.Lost))
		if c.Regressions > 0 {
			c.Verdict += fmt.Sprintf(", and %d figure(s) worse by more than %s%%", c.Regressions, fmtFloat(opt.ThresholdPercent))
		}
	case len(c.Rows) == 0:
		c.Verdict = "nothing measured in both runs"
	case c.Regressions > 0:
		c.Verdict = fmt.Sprintf("regression: %d figure(s) worse by more than %s%%", c.Regressions, fmtFloat(opt.ThresholdPercent))
	case c.Inconclusive > 0:
		c.Verdict = fmt.Sprintf("inconclusive: %d figure(s) changed by more than %s%%, which the repetitions cannot tell from noise (%s)",
			c.Inconclusive, fmtFloat(opt.ThresholdPercent), widest.Name+" "+widest.Metric+" "+fmtDelta(widest.DeltaPercent)+": "+needText(widest.RepetitionsNeeded))
	case opt.Strict && len(c.Doubts) > 0:
		c.Verdict = "inconclusive under --strict: figures measured on a busy background or unstable"
	case c.Better == 0 && c.Worse == 0 && c.NotCompared == 0:
		c.Verdict = VerdictNoChange
	case c.Worse > 0:
		c.Verdict = fmt.Sprintf("some figures worse, none by more than %s%%", fmtFloat(opt.ThresholdPercent))
	case c.Better > 0:
		c.Verdict = "better"
	default:
		c.Verdict = VerdictNoChange + " where comparable"
	}
	if len(c.Lost) > 0 && opt.AllowMissing {
		c.Verdict += fmt.Sprintf(" (%d lost cell(s) allowed)", len(c.Lost))
	}
	return c
}

// doubts names, per run, the primary figures measured on a busy
// background or unstable, so that the verdict says what it rests on.
func doubts(rows []CompareRow) []string {
	var busy, unstable int
	for _, r := range rows {
		if !r.Primary || r.NA == 0 || r.NB == 0 {
			continue
		}
		if r.Busy {
			busy++
		}
		if r.Unstable {
			unstable++
		}
	}
	out := []string{}
	if busy > 0 {
		out = append(out, fmt.Sprintf("%d primary figure(s) measured on a busy background", busy))
	}
	if unstable > 0 {
		out = append(out, fmt.Sprintf("%d primary figure(s) unstable (CV above 10%%)", unstable))
	}
	return out
}

// needsMore orders repetition needs: -1 (more than MaxRepetitions) is the
// most, 0 (unknown) the least.
func needsMore(a, b int) bool {
	if a < 0 || b < 0 {
		return a < 0 && b >= 0
	}
	return a > b
}

// needText says how many repetitions an inconclusive change needs.
func needText(n int) string {
	switch {
	case n < 0:
		return fmt.Sprintf("more than %d repetitions per run would be needed at this spread", MaxRepetitions)
	case n == 0:
		return "one repetition has no spread: repeat at least 3 times"
	}
	return fmt.Sprintf("about %d repetitions per run would decide it at this spread", n)
}

func fmtDelta(d float64) string { return strconv.FormatFloat(d, 'f', 1, 64) + "%" }

// sameDatapath says whether two rows of one key ran on the same data
// path; a row from a record older than the data path matches any.
func sameDatapath(a, b summary.Summary) bool {
	return a.Datapath == "" || b.Datapath == "" || a.Datapath == b.Datapath
}

// firstProblem is the first error of a cell's failed or skipped
// repetitions, or its status when it has no error text.
func firstProblem(s summary.Summary) string {
	for _, p := range s.Problems {
		if p.Error != "" {
			return p.Error
		}
	}
	if len(s.Problems) > 0 {
		return s.Problems[0].Status
	}
	return ""
}

// doubt lists what to distrust in one run's figure f of row s.
func doubt(side string, s summary.Summary, f summary.Figure) string {
	var ds []string
	if f.Unstable() {
		ds = append(ds, fmt.Sprintf("unstable (CV %.1f%%)", 100*f.CV))
	}
	if s.BackgroundBusy {
		ds = append(ds, "busy background")
	}
	if s.Emulated {
		ds = append(ds, "emulated")
	}
	if s.Failed > 0 && s.OK > 0 {
		ds = append(ds, fmt.Sprintf("%d of %d repetitions failed", s.Failed, s.Repetitions))
	}
	if len(ds) == 0 {
		return ""
	}
	return side + ": " + strings.Join(ds, ", ")
}

func joinNotes(ns ...string) string {
	var out []string
	for _, n := range ns {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}

// compareFigure applies Welch's t-test to one figure.
func compareFigure(a, b summary.Figure, m metric, opt CompareOptions) CompareRow {
	r := CompareRow{
		Metric: m.name, Unit: m.unit, HigherIsBetter: m.higher, Primary: m.primary,
		NA: a.N, NB: b.N, MeanA: summary.Round6(a.Mean), MeanB: summary.Round6(b.Mean),
		StdDevA: summary.Round6(a.StdDev), StdDevB: summary.Round6(b.StdDev), PValue: -1,
		Verdict: VerdictNotCompared,
	}
	if a.N > 0 && a.Mean != 0 {
		r.DeltaPercent = summary.Round6(100 * (b.Mean - a.Mean) / a.Mean)
	}
	switch {
	case a.N == 0 || b.N == 0:
		r.Note = "measured in only one run"
		return r
	case a.N < 2 || b.N < 2:
		r.Note = "fewer than two ok repetitions in a run: no test possible"
		if math.Abs(r.DeltaPercent) > opt.ThresholdPercent {
			r.Verdict = VerdictInconclusive
		}
		return r
	}
	p := WelchP(a.Mean, a.StdDev, a.N, b.Mean, b.StdDev, b.N)
	r.PValue = summary.Round6(p)
	if p >= 1-opt.Confidence {
		// Not significant: no change when the observed change is within
		// the threshold, else a change the repetitions cannot decide.
		r.Verdict = VerdictNoChange
		if math.Abs(r.DeltaPercent) > opt.ThresholdPercent {
			r.Verdict = VerdictInconclusive
			r.RepetitionsNeeded = RepetitionsNeeded(b.Mean-a.Mean, a.StdDev, b.StdDev, opt.Confidence, 0.8)
		}
		return r
	}
	up := b.Mean > a.Mean
	if up == m.higher {
		r.Verdict = VerdictBetter
	} else {
		r.Verdict = VerdictWorse
		r.Regression = m.primary && math.Abs(r.DeltaPercent) > opt.ThresholdPercent
	}
	return r
}

// RepetitionsNeeded is the smallest number of repetitions per run (at
// least 2, at most MaxRepetitions; -1 beyond) at which Welch's t-test at
// the two-sided confidence finds a true difference delta between two runs
// whose repetitions spread with standard deviations sdA and sdB, with the
// given power. The power is the usual approximation by the central t
// distribution shifted by the noncentrality delta/SE.
func RepetitionsNeeded(delta, sdA, sdB, confidence, power float64) int {
	v := sdA*sdA + sdB*sdB
	if delta == 0 {
		return -1
	}
	if v == 0 {
		return 2
	}
	for n := 2; n <= MaxRepetitions; n++ {
		fn := float64(n)
		se := math.Sqrt(v / fn)
		df := v * v / ((sdA*sdA*sdA*sdA + sdB*sdB*sdB*sdB) / (fn - 1))
		dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
		crit := dist.Quantile(1 - (1-confidence)/2)
		if dist.Survival(crit-math.Abs(delta)/se) >= power {
			return n
		}
	}
	return -1
}

// WelchP is the two-sided p-value of Welch's unequal-variances t-test for
// the difference of two means, from each sample's mean, standard deviation
// (divisor n-1) and size (at least 2 each). With no spread in either
// sample it is 1 for equal means and 0 otherwise.
func WelchP(meanA, sdA float64, nA int, meanB, sdB float64, nB int) float64 {
	va, vb := sdA*sdA/float64(nA), sdB*sdB/float64(nB)
	se2 := va + vb
	if se2 == 0 {
		if meanA == meanB {
			return 1
		}
		return 0
	}
	t := (meanB - meanA) / math.Sqrt(se2)
	df := se2 * se2 / (va*va/float64(nA-1) + vb*vb/float64(nB-1))
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	return 2 * dist.Survival(math.Abs(t))
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// WriteComparison writes a comparison as an aligned text table with the
// cells present in only one run and the verdict.
func WriteComparison(w io.Writer, c Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "run B %s against run A %s: Welch t-test at %s%% confidence, regression threshold %s%%\n\n",
		c.RunB, c.RunA, fmtFloat(100*c.Confidence), fmtFloat(c.ThresholdPercent))
	cols := []summary.GridColumn{
		{Header: "cell", Left: true}, {Header: "figure", Left: true}, {Header: "role", Left: true}, {Header: "A"}, {Header: "B"},
		{Header: "Δ %"}, {Header: "p"}, {Header: "verdict", Left: true}, {Header: "note", Left: true},
	}
	var grid []summary.GridRow
	for _, r := range c.Rows {
		verdict := r.Verdict
		if r.Regression {
			verdict += " (regression)"
		}
		if r.Verdict == VerdictInconclusive {
			switch n := r.RepetitionsNeeded; {
			case n > 0:
				verdict += fmt.Sprintf(" (needs ~%d reps)", n)
			case n < 0:
				verdict += fmt.Sprintf(" (needs >%d reps)", MaxRepetitions)
			}
		}
		role := "secondary"
		if r.Primary {
			role = "primary"
		}
		p := summary.Missing
		if r.PValue >= 0 {
			p = strconv.FormatFloat(r.PValue, 'f', 3, 64)
		}
		grid = append(grid, summary.GridRow{Cells: []summary.GridCell{
			{Text: r.Name}, {Text: r.Metric + " (" + r.Unit + ")"}, {Text: role},
			{Text: summary.Num3(r.MeanA)}, {Text: summary.Num3(r.MeanB)},
			{Text: strconv.FormatFloat(r.DeltaPercent, 'f', 1, 64)}, {Text: p},
			{Text: verdict}, {Text: r.Note},
		}})
	}
	if len(grid) > 0 {
		if err := summary.RenderGrid(&b, cols, grid); err != nil {
			return err
		}
	}
	if len(c.OnlyA) > 0 {
		fmt.Fprintf(&b, "\nonly in run A (%s):\n", c.RunA)
		summary.WriteWrapped(&b, c.OnlyA, "  ")
	}
	if len(c.OnlyB) > 0 {
		fmt.Fprintf(&b, "\nonly in run B (%s):\n", c.RunB)
		summary.WriteWrapped(&b, c.OnlyB, "  ")
	}
	if len(c.Lost) > 0 {
		head := "\nlost: ok in run A, missing or failed in run B"
		if c.AllowMissing {
			head += " (allowed by --allow-missing)"
		}
		fmt.Fprintf(&b, "%s:\n", head)
		for _, l := range c.Lost {
			line := "  " + l.Name + ": " + l.Status
			if l.Reason != "" {
				line += ": " + l.Reason
			}
			fmt.Fprintln(&b, line)
		}
	}
	sec := c.Secondary
	fmt.Fprintf(&b, "\n%d figures compared. Primary, deciding: %d better, %d worse, %d no significant change, %d inconclusive, %d not comparable.\n",
		len(c.Rows), c.Better, c.Worse, c.NoChange, c.Inconclusive, c.NotCompared)
	fmt.Fprintf(&b, "Secondary, shown only: %d better, %d worse, %d no significant change, %d inconclusive, %d not comparable.\n",
		sec.Better, sec.Worse, sec.NoChange, sec.Inconclusive, sec.NotCompared)
	fmt.Fprintf(&b, "verdict: %s\n", c.Verdict)
	if len(c.Doubts) > 0 {
		what := "said, not failing the gate (--strict fails it)"
		if c.Strict {
			what = "failing the gate (--strict)"
		}
		fmt.Fprintf(&b, "doubts, %s: %s\n", what, strings.Join(c.Doubts, "; "))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// ComparisonJSON writes a comparison as indented JSON.
func ComparisonJSON(w io.Writer, c Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("write comparison json: %w", err)
	}
	return nil
}
