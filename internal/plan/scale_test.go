package plan_test

import (
	"math"
	"testing"

	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/scenario"
)

// TestTunnelsEstimate: the estimate adds, per step of more than one
// tunnel, its tunnels at their method's estimated cost, and nothing for
// one tunnel; reconf counts its duration and a second. Without a
// catalog that knows the costs, a tunnel counts DefaultTunnelCost.
func TestTunnelsEstimate(t *testing.T) {
	s, err := scenario.Parse([]byte("methods: [vxlan, wireguard-go]\ntunnels: [1, 1000]\ntests: [tcp_stream, reconf]\nduration: 6s\nomit: 0s\nrepetitions: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	steps := plan.Build(s, scaleCatalog{})
	if len(steps) != 8 {
		t.Fatalf("%d steps, want 2 methods x 2 counts x 2 repetitions", len(steps))
	}
	// tcp_stream 6 s, reconf 6 s + 1 s.
	if got := steps[0].Measured(); got != 13 {
		t.Errorf("planned %v s, want 13", got)
	}
	// 1000 vxlan devices at 4 ms and 1000 wireguard-go peers at 1 ms
	// (the catalog's costs), twice each.
	want := 2 * (1000*0.004 + 1000*0.001)
	if got := plan.TunnelsEstimate(steps); math.Abs(got-want) > 1e-9 {
		t.Errorf("tunnels' estimate %v s, want %v", got, want)
	}
	if got, base := plan.Estimate(steps), 8*(13+plan.StepOverhead); math.Abs(got-base-want) > 1e-9 {
		t.Errorf("estimate %v s, want %v (steps) + %v (tunnels)", got, base, want)
	}
	if got, want := plan.TunnelsEstimate(plan.Build(s, overheads{})), 2*2*1000*plan.DefaultTunnelCost; math.Abs(got-want) > 1e-9 {
		t.Errorf("without the catalog's costs: %v s, want %v", got, want)
	}
	s.Tunnels = nil
	if got := plan.TunnelsEstimate(plan.Build(s, overheads{})); got != 0 {
		t.Errorf("one tunnel estimated at %v s, want 0", got)
	}
}
