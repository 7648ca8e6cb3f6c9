package compare

import (
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
)

// TestCompareConnectRecover: the connect and recover figures are compared
// too, lower being better: run B, whose vxlan recovers ten times slower,
// is a regression there.
func TestCompareConnectRecover(t *testing.T) {
	runA, cellsA := fixture.TestsRun()
	runB, cellsB := fixture.TestsRun()
	runB.ID = "20250317T101500-2222"
	for i := range cellsB {
		c := &cellsB[i]
		c.RunID = runB.ID
		if c.Method == "vxlan" {
			r := *c.Recover
			r.Recovery *= 10
			c.Recover = &r
		}
	}
	cmp := Compare(runA, cellsA, runB, cellsB, CompareOptions{})
	seen := map[string]CompareRow{}
	for _, r := range cmp.Rows {
		seen[r.Key+" "+r.Metric] = r
	}
	for _, m := range []string{"connect", "recover", "recover lost"} {
		r, ok := seen["native/ipv4/mtu1500/offloads-on/p256 "+m]
		if !ok {
			t.Errorf("no %q row for native", m)
			continue
		}
		if r.HigherIsBetter || r.Unit == "" {
			t.Errorf("%s: higher is better %v, unit %q", m, r.HigherIsBetter, r.Unit)
		}
	}
	if r := seen["vxlan/ipv4/mtu1500/offloads-on/p256 recover"]; r.Verdict != VerdictWorse || !r.Regression {
		t.Errorf("vxlan recover ten times slower: %+v, want a regression", r)
	}
	if cmp.Outcome != OutcomeRegression {
		t.Errorf("outcome %q, want %q", cmp.Outcome, OutcomeRegression)
	}
}
