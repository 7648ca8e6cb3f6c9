package runner

import (
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/scenario"
)

// TestVMBudget: the kernel lab's time budget follows the plan, so every
// dimension and test counts and cells a method cannot carry do not.
func TestVMBudget(t *testing.T) {
	reg := registry.Builtin()
	base := scenario.Default()
	base.Methods = []string{"native"}
	steps, budget := VMBudget(base, reg)
	if steps != 3 || budget <= vmBootAllowance {
		t.Fatalf("default native: %d steps, budget %s", steps, budget)
	}
	dirs := base
	dirs.Directions = []string{scenario.DirForward, scenario.DirReverse}
	if s2, b2 := VMBudget(dirs, reg); s2 != 2*steps || b2-vmBootAllowance != 2*(budget-vmBootAllowance) {
		t.Errorf("two directions: %d steps, %s; want twice %d steps, %s", s2, b2, steps, budget)
	}
	tests := base
	tests.Tests = append(tests.Tests, scenario.TestParallel)
	if _, b3 := VMBudget(tests, reg); b3 <= budget {
		t.Errorf("one more test: budget %s, want more than %s", b3, budget)
	}
	ipip := base
	ipip.Methods = []string{"native", "ipip"}
	ipip.Families = []string{"ipv6"}
	if s4, _ := VMBudget(ipip, reg); s4 != steps {
		t.Errorf("ipip carries no ipv6: %d steps, want %d (native's)", s4, steps)
	}
	if budget > vmBootAllowance+time.Duration(vmSlowdown*3*(10+1+3+10))*time.Second {
		t.Errorf("budget %s is beyond ten times the plan", budget)
	}
}
