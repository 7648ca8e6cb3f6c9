package vm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
)

// TestBudget: the kernel lab's time budget follows the plan, so every
// dimension and test counts and cells a method cannot carry do not.
func TestBudget(t *testing.T) {
	reg := registry.Builtin()
	base := scenario.Default()
	base.Methods = []string{"native"}
	steps, budget := Budget(base, reg)
	if steps != 3 || budget <= vmBootAllowance {
		t.Fatalf("default native: %d steps, budget %s", steps, budget)
	}
	dirs := base
	dirs.Directions = []string{scenario.DirForward, scenario.DirReverse}
	if s2, b2 := Budget(dirs, reg); s2 != 2*steps || b2-vmBootAllowance != 2*(budget-vmBootAllowance) {
		t.Errorf("two directions: %d steps, %s; want twice %d steps, %s", s2, b2, steps, budget)
	}
	tests := base
	tests.Tests = append(tests.Tests, scenario.TestParallel)
	if _, b3 := Budget(tests, reg); b3 <= budget {
		t.Errorf("one more test: budget %s, want more than %s", b3, budget)
	}
	ipip := base
	ipip.Methods = []string{"native", "ipip"}
	ipip.Families = []string{"ipv6"}
	if s4, _ := Budget(ipip, reg); s4 != steps {
		t.Errorf("ipip carries no ipv6: %d steps, want %d (native's)", s4, steps)
	}
	if budget > vmBootAllowance+time.Duration(vmSlowdown*3*(10+1+3+10))*time.Second {
		t.Errorf("budget %s is beyond ten times the plan", budget)
	}
}

// TestOpen: on this machine the vm testbed refuses a kernel without its
// modules before it boots anything; inside the lab's guest it is the
// guest's own namespaces, recorded as testbed vm and emulated when the
// lab says so, and runs its plan there (no runner.Delegate).
func TestOpen(t *testing.T) {
	reg := registry.Builtin()
	s := scenario.Default()
	s.Testbed, s.Kernel = "vm", "/boot/vmlinuz"
	t.Setenv(lab.EnvInLab, "")
	if _, err := Open(context.Background(), s, reg, 0, "r1"); err == nil || !strings.HasPrefix(err.Error(), "--modules: give the modules directory of /boot/vmlinuz") {
		t.Errorf("a kernel without modules: %v, want the --modules fix", err)
	}

	s.Kernel = ""
	for _, emulated := range []bool{false, true} {
		t.Setenv(lab.EnvInLab, "1")
		t.Setenv(lab.EnvEmulated, map[bool]string{true: "1"}[emulated])
		tb, err := Open(context.Background(), s, reg, 0, "r1")
		if err != nil {
			t.Fatalf("in the guest: %v", err)
		}
		if _, ok := tb.(runner.Delegate); ok || tb.Name() != "vm" {
			t.Errorf("in the guest: %T named %q, want the guest's own namespaces named vm", tb, tb.Name())
		}
		if e, ok := tb.(runner.Emulator); !ok || e.Emulated() != emulated {
			t.Errorf("in the guest, emulated %v: %T does not say so", emulated, tb)
		}
	}
}
