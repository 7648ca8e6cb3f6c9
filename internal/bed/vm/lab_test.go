package vm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
	if _, err := Open(context.Background(), s, reg, Guest{}, "r1"); err == nil || !strings.HasPrefix(err.Error(), "--modules: give the modules directory of /boot/vmlinuz") {
		t.Errorf("a kernel without modules: %v, want the --modules fix", err)
	}

	s.Kernel = ""
	for _, emulated := range []bool{false, true} {
		t.Setenv(lab.EnvInLab, "1")
		t.Setenv(lab.EnvEmulated, map[bool]string{true: "1"}[emulated])
		tb, err := Open(context.Background(), s, reg, Guest{}, "r1")
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

// TestGuestArgvStopsTheRun runs the guest's command with sh on this
// machine, a script in tunbench's place that records cells until it is
// interrupted, as tunbench does: past its limit the run gets SIGINT,
// finishes (tears down, keeps its records), its database is copied to
// the share and the status says it ran out of time; a run within its
// limit keeps its own status, and its database is copied too.
func TestGuestArgvStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tunbench")
	script := `#!/bin/sh
db=
while [ $# -gt 0 ]; do [ "$1" = --db ] && db=$2; shift; done
trap 'echo interrupted >>"$db"; exit 130' INT
echo cell1 >"$db"
echo log >"$db-wal"
[ -n "$FAST" ] && exit 5
sleep 30 &
wait
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	share := filepath.Join(dir, "share")
	if err := os.Mkdir(share, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		fast   bool
		status int
		db     string
	}{
		{"past its limit", false, exitTimedOut, "cell1\ninterrupted\n"},
		{"within its limit", true, runner.ExitCellsFailed, "cell1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(dir, "guest.db")
			argv := guestArgv(bin, db, share, time.Second, "run", "--quiet")
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "FAST=")
			if tc.fast {
				cmd.Env = append(cmd.Env, "FAST=1")
			}
			start := time.Now()
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.status {
				t.Fatalf("exit %v, want status %d", err, tc.status)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %s: the run was not stopped at its limit", took)
			}
			got, err := os.ReadFile(filepath.Join(share, "guest.db"))
			if err != nil || string(got) != tc.db {
				t.Errorf("the share's database: %q, %v; want %q", got, err, tc.db)
			}
			if wal, err := os.ReadFile(filepath.Join(share, "guest.db-wal")); err != nil || string(wal) != "log\n" {
				t.Errorf("the share's write-ahead log: %q, %v", wal, err)
			}
		})
	}
}
