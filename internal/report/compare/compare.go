// Package compare is the comparison of two runs: per common cell and
// figure, Welch's t-test and a verdict, and the outcome the CLI maps to
// its exit code (regression, lost cells, nothing in common).
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
	// Counts of verdicts over Rows.
	Better      int `json:"better"`
	Worse       int `json:"worse"`
	NoChange    int `json:"no_significant_change"`
	NotCompared int `json:"not_comparable"`
	// Regressions counts rows that are worse by more than the threshold.
	Regressions int `json:"regressions"`
	// Verdict sums the comparison up in one phrase.
	Verdict string `json:"verdict"`
	// Outcome is what a gate acts on: one of the Outcome constants.
	Outcome string `json:"outcome"`
}

// Outcomes of a comparison, from the gate's point of view. tunbench
// compare exits 0 for OutcomePass, 2 for OutcomeRegression, 3 for
// OutcomeNoCommon and 4 for OutcomeLost.
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
	HigherIsBetter bool    `json:"higher_is_better"`
	NA             int     `json:"n_a"`
	NB             int     `json:"n_b"`
	MeanA          float64 `json:"mean_a"`
	MeanB          float64 `json:"mean_b"`
	StdDevA        float64 `json:"stddev_a"`
	StdDevB        float64 `json:"stddev_b"`
	// DeltaPercent is 100 * (MeanB - MeanA) / MeanA.
	DeltaPercent float64 `json:"delta_percent"`
	// PValue is the two-sided p-value of Welch's t-test (1 when both runs
	// have no spread and equal means); -1 when not compared.
	PValue  float64 `json:"p_value"`
	Verdict string  `json:"verdict"`
	// Regression is true when the verdict is worse and the change exceeds
	// the threshold.
	Regression bool `json:"regression"`
	// Note says why a row was not compared, or what to distrust (unstable,
	// busy background) in either run.
	Note string `json:"note,omitempty"`
}

type metric struct {
	name   string
	unit   string
	higher bool
	get    func(summary.Summary) summary.Figure
}

var compareMetrics = []metric{
	{"throughput", summary.UnitGbps, true, func(s summary.Summary) summary.Figure { return s.Throughput }},
	{"p50 rtt", summary.UnitMicros, false, func(s summary.Summary) summary.Figure { return s.P50RTT }},
	{"p99 rtt", summary.UnitMicros, false, func(s summary.Summary) summary.Figure { return s.P99RTT }},
	{"gbit/s per core", summary.UnitGbpsPerCore, true, func(s summary.Summary) summary.Figure { return s.GbpsPerCore }},
	// The connect and recover tests: lower is better.
	{"connect", summary.UnitSeconds, false, connectFigure(func(c *summary.ConnectSummary) summary.Figure { return c.Total })},
	{"recover", summary.UnitSeconds, false, connectFigure(func(c *summary.ConnectSummary) summary.Figure { return c.Recovery })},
	{"recover lost", summary.UnitRequests, false, connectFigure(func(c *summary.ConnectSummary) summary.Figure { return c.Lost })},
	{"rekey outage", summary.UnitSeconds, false, connectFigure(func(c *summary.ConnectSummary) summary.Figure { return c.RekeyOutage })},
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
		AllowMissing: opt.AllowMissing,
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
			row.Note = joinNotes(row.Note, doubt("A", a), doubt("B", b))
			c.Rows = append(c.Rows, row)
		}
	}
	for _, b := range rowsB {
		if !inA[b.Key] {
			c.OnlyB = append(c.OnlyB, summary.RowName(b, v))
		}
	}
	for _, r := range c.Rows {
		switch r.Verdict {
		case VerdictBetter:
			c.Better++
		case VerdictWorse:
			c.Worse++
		case VerdictNoChange:
			c.NoChange++
		default:
			c.NotCompared++
		}
		if r.Regression {
			c.Regressions++
		}
	}
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

func doubt(side string, s summary.Summary) string {
	var ds []string
	if s.Unstable {
		ds = append(ds, "unstable")
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
		Metric: m.name, Unit: m.unit, HigherIsBetter: m.higher,
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
		return r
	}
	p := WelchP(a.Mean, a.StdDev, a.N, b.Mean, b.StdDev, b.N)
	r.PValue = summary.Round6(p)
	if p >= 1-opt.Confidence {
		r.Verdict = VerdictNoChange
		return r
	}
	up := b.Mean > a.Mean
	if up == m.higher {
		r.Verdict = VerdictBetter
	} else {
		r.Verdict = VerdictWorse
		r.Regression = math.Abs(r.DeltaPercent) > opt.ThresholdPercent
	}
	return r
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
		{Header: "cell", Left: true}, {Header: "figure", Left: true}, {Header: "A"}, {Header: "B"},
		{Header: "Δ %"}, {Header: "p"}, {Header: "verdict", Left: true}, {Header: "note", Left: true},
	}
	var grid []summary.GridRow
	for _, r := range c.Rows {
		verdict := r.Verdict
		if r.Regression {
			verdict += " (regression)"
		}
		p := summary.Missing
		if r.PValue >= 0 {
			p = strconv.FormatFloat(r.PValue, 'f', 3, 64)
		}
		grid = append(grid, summary.GridRow{Cells: []summary.GridCell{
			{Text: r.Name}, {Text: r.Metric + " (" + r.Unit + ")"},
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
	fmt.Fprintf(&b, "\n%d figures compared: %d better, %d worse, %d no significant change, %d not comparable.\n",
		len(c.Rows), c.Better, c.Worse, c.NoChange, c.NotCompared)
	fmt.Fprintf(&b, "verdict: %s\n", c.Verdict)
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
