// Package vm is the vm testbed's code: a whole run in the kernel lab, a
// stock kernel booted under qemu with this machine's root file system
// (docs/kernel-lab.md). On this machine the testbed Open returns runs the
// whole plan in the guest (runner.Delegate): the guest runs this same
// tunbench binary on the same scenario, and its records and export come
// back. Inside the guest the vm testbed is the guest's own local
// namespaces, so the run is recorded as testbed vm, emulated when the lab
// says the guest is.
package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
)

// vmSlowdown is how much longer than planned a step may take in the
// kernel lab: software emulation is slow.
const vmSlowdown = 10

// vmBootAllowance is the guest's time to boot and to start tunbench.
const vmBootAllowance = 5 * time.Minute

// guestMargin is how long before the lab's budget ends the run in the
// guest is stopped (SIGINT), so that it tears down what it set up and its
// database comes back before qemu is killed; guestKillAfter is how long
// it then has before SIGKILL.
const (
	guestMargin    = 3 * time.Minute
	guestKillAfter = 90 * time.Second
)

// exitTimedOut is timeout(1)'s exit status when the command ran out of
// time.
const exitTimedOut = 124

// InGuest reports whether this process runs inside the kernel lab's
// guest, where the vm testbed is the guest's own kernel and namespaces.
func InGuest() bool { return os.Getenv(lab.EnvInLab) == "1" }

// Budget is how long the kernel lab may take for sc's plan: the boot,
// then vmSlowdown times every step's planned time and overhead
// (plan.Estimate, which knows the tests, directions, MSS values, WAN
// conditions and the families each method carries).
func Budget(sc scenario.Scenario, reg *method.Registry) (steps int, budget time.Duration) {
	ps := plan.Build(sc, method.Catalog{R: reg})
	return len(ps), vmBootAllowance + time.Duration(vmSlowdown*plan.Estimate(ps)*float64(time.Second))
}

// Guest sizes the kernel lab's guest of a run.
type Guest struct {
	// MemoryMiB is its memory; the lab's default when zero.
	MemoryMiB int
	// Timeout bounds the whole run in it; zero means Budget's.
	Timeout time.Duration
}

// Open opens the vm testbed of s for run id. On this machine it checks
// the lab's tools and finds the guest kernel (s.Kernel and s.Modules, or
// the stock kernel, fetched once) and returns the Lab that runs the whole
// plan there, in a guest sized by g. Inside the guest it returns the
// guest's local namespaces.
func Open(ctx context.Context, s scenario.Scenario, reg *method.Registry, g Guest, id string) (testbed.Testbed, error) {
	if InGuest() {
		return guest{LocalTestbed: localns.LocalTestbed{ID: id}, emulated: os.Getenv(lab.EnvEmulated) == "1"}, nil
	}
	if s.Kernel != "" && s.Modules == "" {
		return nil, fmt.Errorf("--modules: give the modules directory of %s (its lib/modules/<version>) with --kernel", s.Kernel)
	}
	if err := lab.ToolsAvailable(); err != nil {
		return nil, err
	}
	var k lab.Kernel
	var err error
	switch {
	case s.Kernel != "":
		k, err = lab.FromPath(s.Kernel, s.Modules)
	default:
		k, err = lab.DefaultKernel(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("guest kernel: %w", err)
	}
	return &Lab{kernel: k, guest: g, reg: reg}, nil
}

// guest is the vm testbed inside the kernel lab's guest: the guest's own
// local namespaces, emulated when the lab booted it under software
// emulation (runner.Emulator).
type guest struct {
	localns.LocalTestbed
	emulated bool
}

// Name is the testbed the run is recorded on.
func (guest) Name() string { return "vm" }

// Emulated reports whether the lab runs this guest under software
// emulation.
func (g guest) Emulated() bool { return g.emulated }

// Lab is the vm testbed seen from this machine: the kernel lab, which
// runs the whole plan in its guest (runner.Delegate).
type Lab struct {
	kernel lab.Kernel
	guest  Guest
	reg    *method.Registry
}

// Name is the testbed's name.
func (*Lab) Name() string { return "vm" }

// Pair refuses: the lab's cells are built in its guest (RunWhole).
func (*Lab) Pair(context.Context, testbed.Spec) (*testbed.Pair, error) {
	return nil, errors.New("testbed vm: the kernel lab builds its endpoints in its guest; run the whole plan there (RunWhole)")
}

// RunWhole runs sc on the vm testbed inside the kernel lab. The guest
// runs this same tunbench binary; its results database comes back over
// the results share and is imported into db, so that every cell measured
// comes back even when the guest fails, and its JSON export comes back
// as written there.
func (l *Lab) RunWhole(ctx context.Context, sc scenario.Scenario, labels map[string]string, db runner.Importer, notes io.Writer) (runner.Delegated, error) {
	var none runner.Delegated
	work, err := os.MkdirTemp("", "tunbench-vm-")
	if err != nil {
		return none, err
	}
	defer os.RemoveAll(work)
	share := lab.ResultsDir(work)
	if err := os.MkdirAll(share, 0o700); err != nil {
		return none, err
	}
	// The guest sees the host's root, except /tmp and /run: give it a copy
	// of this binary on the share, wherever this one lives.
	exe, err := os.Executable()
	if err != nil {
		return none, fmt.Errorf("find the tunbench binary: %w", err)
	}
	if err := copyFile(exe, filepath.Join(share, "tunbench"), 0o755); err != nil {
		return none, err
	}
	// The guest runs the same scenario on testbed vm (its own namespaces
	// there) and boots no kernel.
	g := sc
	g.Kernel, g.Modules = "", ""
	if err := os.WriteFile(filepath.Join(share, "scenario.yaml"), []byte(g.YAML()), 0o600); err != nil {
		return none, err
	}
	dir := lab.GuestResultsDir
	steps, budget := Budget(sc, l.reg)
	if l.guest.Timeout > 0 {
		budget = l.guest.Timeout
	}
	// SQLite's WAL needs shared memory, which 9p lacks: the guest keeps its
	// database on its own /tmp and copies it to the share at the end, also
	// after a failure, so every measured cell comes back. The run in the
	// guest stops itself (SIGINT: it tears down and keeps what it
	// measured) guestMargin before the budget ends and qemu is killed.
	limit := budget - guestMargin
	argv := guestArgv(dir+"/tunbench", "/tmp/guest.db", dir, limit,
		"run", "-f", dir+"/scenario.yaml", "--export", dir+"/guest.json", "--quiet")
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		argv = append(argv, "--label", k+"="+labels[k])
	}
	if notes != nil {
		fmt.Fprintf(notes, "booting %s in the kernel lab (%d steps, up to %s)...\n", l.kernel.Version, steps, budget.Round(time.Minute))
	}
	out, err := lab.Run(ctx, lab.Config{Kernel: l.kernel, WorkDir: work, MemoryMiB: l.guest.MemoryMiB, Timeout: budget}, lab.Guest{Argv: argv})
	if err != nil {
		return none, fmt.Errorf("kernel lab: %w", err)
	}
	guestDB := filepath.Join(share, "guest.db")
	var importErr error
	var imported store.ImportStats
	if _, statErr := os.Stat(guestDB); statErr == nil {
		if imported, err = db.ImportFile(ctx, guestDB); err != nil {
			importErr = fmt.Errorf("import the guest's results: %w", err)
		}
	}
	if out.ExitCode == exitTimedOut {
		return none, errors.Join(importErr, fmt.Errorf("the run in the kernel lab (kernel %s) was stopped at %s, its time budget of %s less %s for its teardown, "+
			"and the %d cells it recorded are stored: its cells took longer under emulation than the budget allows (%d times the plan's estimate and %s to boot, unless --vm-timeout gives it). "+
			"Give it more with --vm-timeout, or run fewer cells at a time (fewer methods, tunnels or repetitions)\n%s",
			l.kernel.Version, limit.Round(time.Second), budget.Round(time.Second), guestMargin, imported.Cells, vmSlowdown, vmBootAllowance, tail(out.Stderr, 20)))
	}
	if out.ExitCode != 0 && out.ExitCode != runner.ExitCellsFailed {
		return none, errors.Join(importErr, fmt.Errorf("tunbench in the guest (kernel %s) exited with status %d:\n%s%s",
			l.kernel.Version, out.ExitCode, tail(out.Stderr, 40), tail(out.Stdout, 20)))
	}
	if importErr != nil {
		return none, importErr
	}
	// Only the run's id is read here; the export goes on as the guest
	// wrote it.
	var doc struct {
		Run result.Run `json:"run"`
	}
	data, err := os.ReadFile(filepath.Join(share, "guest.json"))
	if err == nil {
		err = json.Unmarshal(data, &doc)
	}
	if err == nil && doc.Run.ID == "" {
		err = errors.New("no run id")
	}
	if err != nil {
		return none, fmt.Errorf("read the guest's export: %w", err)
	}
	return runner.Delegated{
		RunID:  doc.Run.ID,
		Export: data,
		Where:  fmt.Sprintf("in the kernel lab (kernel %s, boot %.1f s, emulated %v)", l.kernel.Version, out.BootTime.Seconds(), out.Emulated),
	}, nil
}

// guestArgv is the guest's command: bin with args and "--db db", stopped
// with SIGINT after limit (SIGKILL guestKillAfter later), then db (and
// its write-ahead log, left when the run was killed) copied into dir
// whatever its exit; the command's exit status is bin's, or
// exitTimedOut when it ran out of time.
func guestArgv(bin, db, dir string, limit time.Duration, args ...string) []string {
	script := `timeout -s INT -k ` + strconv.Itoa(int(guestKillAfter.Seconds())) + ` "$0" "$@"; rc=$?; ` +
		`cp ` + db + ` ` + dir + `/; [ ! -e ` + db + `-wal ] || cp ` + db + `-wal ` + dir + `/; exit $rc`
	return append([]string{"/bin/sh", "-c", script, strconv.Itoa(int(limit.Seconds())), bin}, append(args, "--db", db)...)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return out.Close()
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
