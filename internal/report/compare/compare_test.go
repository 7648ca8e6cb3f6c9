package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

// TestWelchP against values computed with R's t.test(var.equal = FALSE)
// and the critical value of Student's t.
func TestWelchP(t *testing.T) {
	tests := []struct {
		ma, sa float64
		na     int
		mb, sb float64
		nb     int
		want   float64
	}{
		// t.test(c(9,10,11), c(11,12,13)): t = -2.4495, df = 4, p = 0.07048
		{10, 1, 3, 12, 1, 3, 0.07048},
		// A difference of exactly t(0.975, 4) standard errors: p = 0.05.
		{10, 1, 3, 10 + 2.776445*math.Sqrt(2.0/3), 1, 3, 0.05},
		{5, 0, 3, 5, 0, 3, 1},
		{5, 0, 3, 6, 0, 3, 0},
	}
	for _, tt := range tests {
		got := WelchP(tt.ma, tt.sa, tt.na, tt.mb, tt.sb, tt.nb)
		if math.Abs(got-tt.want) > 5e-5 {
			t.Errorf("WelchP(%g±%g n%d, %g±%g n%d) = %.5f, want %.5f", tt.ma, tt.sa, tt.na, tt.mb, tt.sb, tt.nb, got, tt.want)
		}
	}
}

func TestCompareIdenticalRuns(t *testing.T) {
	rr := fixture.DB(t)[0]
	c := Compare(rr.Run, rr.Cells, rr.Run, rr.Cells, CompareOptions{})
	if c.Verdict != VerdictNoChange || c.Regressions != 0 || len(c.OnlyA)+len(c.OnlyB) != 0 {
		t.Errorf("identical runs: verdict %q, %d regressions, only %q / %q", c.Verdict, c.Regressions, c.OnlyA, c.OnlyB)
	}
	for _, r := range c.Rows {
		if r.Verdict != VerdictNoChange || r.DeltaPercent != 0 {
			t.Errorf("%s %s: %s, Δ %g%%", r.Name, r.Metric, r.Verdict, r.DeltaPercent)
		}
	}
}

func TestCompareKnownRegression(t *testing.T) {
	rr := fixture.DB(t)[0]
	slow := fixture.ScaleThroughput(rr.Cells, "vxlan", 0.7)
	c := Compare(rr.Run, rr.Cells, rr.Run, slow, CompareOptions{ThresholdPercent: 5})
	if c.Regressions == 0 {
		t.Fatalf("a 30%% drop of vxlan was not found: %+v", c)
	}
	for _, r := range c.Rows {
		isVxlanTP := r.Metric == "throughput" && bytes.HasPrefix([]byte(r.Key), []byte("vxlan/"))
		if r.Regression && !(r.Metric == "throughput" || r.Metric == "gbit/s per core") {
			t.Errorf("regression in %s %s, which did not change", r.Name, r.Metric)
		}
		if isVxlanTP && math.Abs(r.DeltaPercent+30) > 0.01 {
			t.Errorf("%s: Δ %g%%, want -30%%", r.Name, r.DeltaPercent)
		}
		if !bytes.HasPrefix([]byte(r.Key), []byte("vxlan/")) && r.Verdict != VerdictNoChange {
			t.Errorf("%s %s changed: %s", r.Name, r.Metric, r.Verdict)
		}
	}
	// The same drop judged with a 50% threshold is worse but no regression.
	c = Compare(rr.Run, rr.Cells, rr.Run, slow, CompareOptions{ThresholdPercent: 50})
	if c.Regressions != 0 || c.Worse == 0 {
		t.Errorf("threshold 50%%: %d regressions, %d worse", c.Regressions, c.Worse)
	}
}

// TestFixtureComparison: the two real fixture runs compared, as text.
func TestFixtureComparison(t *testing.T) {
	runs := fixture.DB(t)
	c := Compare(runs[0].Run, runs[0].Cells, runs[1].Run, runs[1].Cells, CompareOptions{})
	var b bytes.Buffer
	if err := WriteComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	fixture.Golden(t, "fixture.compare.golden", b.Bytes())
}

// TestCompareOutcomes: the gate's outcome for each kind of second run.
func TestCompareOutcomes(t *testing.T) {
	rr := fixture.DB(t)[0]
	edit := func(f func(*result.Cell) bool) []result.Cell {
		var out []result.Cell
		for _, c := range rr.Cells {
			if f(&c) {
				out = append(out, c)
			}
		}
		return out
	}
	noVxlan := edit(func(c *result.Cell) bool { return c.Method != "vxlan" })
	vxlanFailed := edit(func(c *result.Cell) bool {
		if c.Method == "vxlan" {
			c.Status, c.Error, c.Throughput, c.Latency = result.StatusFailed, "setup: boom", nil, nil
		}
		return true
	})
	otherKeys := edit(func(c *result.Cell) bool { c.Key = "x/" + c.Key; return true })
	tests := []struct {
		name    string
		b       []result.Cell
		allow   bool
		outcome string
		lost    int
		status  string
	}{
		{"identical", rr.Cells, false, OutcomePass, 0, ""},
		{"regression", fixture.ScaleThroughput(rr.Cells, "vxlan", 0.7), false, OutcomeRegression, 0, ""},
		{"no common cells", otherKeys, false, OutcomeNoCommon, 0, ""},
		{"no common cells, allowed", otherKeys, true, OutcomeNoCommon, 0, ""},
		{"missing", noVxlan, false, OutcomeLost, -1, "missing"},
		{"missing, allowed", noVxlan, true, OutcomePass, -1, "missing"},
		{"failed", vxlanFailed, false, OutcomeLost, -1, "failed"},
		{"failed, allowed", vxlanFailed, true, OutcomePass, -1, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Compare(rr.Run, rr.Cells, rr.Run, tt.b, CompareOptions{AllowMissing: tt.allow})
			if c.Outcome != tt.outcome {
				t.Errorf("outcome %q (verdict %q), want %q", c.Outcome, c.Verdict, tt.outcome)
			}
			if tt.lost == 0 && len(c.Lost) != 0 {
				t.Errorf("lost %+v, want none", c.Lost)
			}
			if tt.lost < 0 && len(c.Lost) == 0 {
				t.Errorf("no lost cell reported")
			}
			for _, l := range c.Lost {
				if tt.status != "" && (l.Status != tt.status || !strings.HasPrefix(l.Key, "vxlan/")) {
					t.Errorf("lost %+v, want vxlan cells %s", l, tt.status)
				}
				if l.Status == "failed" && l.Reason != "setup: boom" {
					t.Errorf("failed cell's reason %q, want its error", l.Reason)
				}
			}
		})
	}
}

// TestRepetitionsNeeded against the sample sizes of the two-sample t-test
// at two-sided alpha 0.05 and power 0.8 (Cohen's tables, G*Power): 17 per
// group for an effect of one standard deviation, 64 for half of one.
func TestRepetitionsNeeded(t *testing.T) {
	for _, tt := range []struct {
		delta, sd float64
		want      int
	}{
		{1, 1, 17},
		{0.5, 1, 64},
		{2, 1, 6},
	} {
		got := RepetitionsNeeded(tt.delta, tt.sd, tt.sd, 0.95, 0.8)
		if got < tt.want-1 || got > tt.want+1 {
			t.Errorf("RepetitionsNeeded(Δ %g, sd %g) = %d, want %d ± 1", tt.delta, tt.sd, got, tt.want)
		}
	}
	if got := RepetitionsNeeded(0.001, 1, 1, 0.95, 0.8); got != -1 {
		t.Errorf("a change of 0.001 sd needs %d repetitions, want -1 (more than %d)", got, MaxRepetitions)
	}
}

// TestCompareInconclusive: the case of issue 42. Throughput halved at two
// repetitions, with the p99 RTT better and run B on a busy background,
// is never "better" and never a pass: a change the repetitions cannot
// decide is inconclusive with the repetitions that would decide it, and
// the busy background is said.
func TestCompareInconclusive(t *testing.T) {
	rr := fixture.DB(t)[0]
	a, b := fixture.InconclusivePair(rr.Cells)
	c := Compare(rr.Run, a, rr.Run, b, CompareOptions{})
	if c.Outcome != OutcomeInconclusive || !strings.HasPrefix(c.Verdict, "inconclusive:") {
		t.Fatalf("outcome %q, verdict %q; want inconclusive", c.Outcome, c.Verdict)
	}
	var tp *CompareRow
	for i, r := range c.Rows {
		if r.Metric == "throughput" {
			tp = &c.Rows[i]
		}
	}
	if tp == nil || tp.Verdict != VerdictInconclusive || !tp.Primary || tp.RepetitionsNeeded == 0 || !tp.Busy {
		t.Fatalf("throughput row %+v: want primary, inconclusive, busy, with the repetitions needed", tp)
	}
	if !strings.Contains(c.Verdict, "repetitions per run") {
		t.Errorf("verdict %q does not say how many repetitions would decide it", c.Verdict)
	}
	if len(c.Doubts) == 0 || !strings.Contains(strings.Join(c.Doubts, " "), "busy background") {
		t.Errorf("doubts %q do not say run B was busy", c.Doubts)
	}
	// The same figures measured on a busy machine: said, and a failed
	// gate only under --strict.
	busy := make([]result.Cell, len(a))
	for i, c := range a {
		c.Meta.Busy, c.Meta.BackgroundBusy = true, 60
		busy[i] = c
	}
	lax := Compare(rr.Run, a, rr.Run, busy, CompareOptions{})
	if lax.Outcome != OutcomePass || lax.Verdict != VerdictNoChange || len(lax.Doubts) == 0 {
		t.Errorf("same figures, run B busy: outcome %q, verdict %q, doubts %q; want pass, no change, the busy background said", lax.Outcome, lax.Verdict, lax.Doubts)
	}
	strict := Compare(rr.Run, a, rr.Run, busy, CompareOptions{Strict: true})
	if strict.Outcome != OutcomeInconclusive {
		t.Errorf("same figures, run B busy, --strict: outcome %q, want inconclusive (doubts %q)", strict.Outcome, strict.Doubts)
	}
}
