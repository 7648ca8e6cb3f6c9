package compare

import (
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
)

// TestCompareScale: the tunnels dimension's set-up and reconf blocked
// time are compared as secondary figures, lower being better: run B,
// whose vxlan sets its 100 tunnels up three times slower, is worse there
// but no regression (throughput, the primary figure, did not move).
func TestCompareScale(t *testing.T) {
	runA, cellsA := fixture.ScaleRun()
	runB, cellsB := fixture.ScaleRun()
	runB.ID = "20261128T070000-5ca2"
	for i := range cellsB {
		c := &cellsB[i]
		c.RunID = runB.ID
		if c.Method == "vxlan" && c.Scale != nil && c.Params.Tunnels == 100 {
			k := *c.Scale
			k.Setup *= 3
			c.Scale = &k
		}
	}
	cmp := Compare(runA, cellsA, runB, cellsB, CompareOptions{})
	seen := map[string]CompareRow{}
	for _, r := range cmp.Rows {
		seen[r.Key+" "+r.Metric] = r
	}
	const key = "vxlan/kernel/ipv4/mtu1500/offloads-true/streams1/tunnels100"
	r, ok := seen[key+" set-up"]
	if !ok || r.HigherIsBetter || r.Primary || r.Verdict != VerdictWorse || r.Regression {
		t.Errorf("vxlan set-up three times slower: %+v (found %v), want worse, secondary, no regression", r, ok)
	}
	if r, ok := seen[key+" reconf blocked"]; !ok || r.Verdict == VerdictWorse {
		t.Errorf("vxlan reconf blocked: %+v (found %v), want compared and not worse", r, ok)
	}
	if _, ok := seen["native/kernel/ipv4/mtu1500/offloads-true/streams1 set-up"]; ok {
		t.Error("native, which set up no tunnel, has a set-up row")
	}
	if cmp.Outcome == OutcomeRegression {
		t.Errorf("outcome %q: a secondary figure decided", cmp.Outcome)
	}
}
