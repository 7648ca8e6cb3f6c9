package plan_test

import (
	"testing"

	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/scenario"
)

// TestConnectRecoverEstimate: recover carries its down time into every
// cell's parameters, and the estimate counts both tests.
func TestConnectRecoverEstimate(t *testing.T) {
	s, err := scenario.Parse([]byte("methods: [native]\ntests: [connect, recover]\nrecover: {down: 3s}\nrepetitions: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	steps := plan.Build(s, overheads{})
	if len(steps) != 2 {
		t.Fatalf("%d steps, want one per repetition", len(steps))
	}
	if d := steps[0].Params.RecoverDown; d != 3 {
		t.Errorf("recover_down_s = %v, want 3", d)
	}
	// connect 0.5 s, recover 3 s down + 6 s (lead, recovery, tail, rekey).
	if got := steps[0].Measured(); got != 9.5 {
		t.Errorf("planned %v s, want 9.5", got)
	}
	s.Tests = []string{"connect"}
	if d := plan.Build(s, overheads{})[0].Params.RecoverDown; d != 0 {
		t.Errorf("recover_down_s = %v without recover, want 0", d)
	}
}
