package runner

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
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/scenario"
)

// vmSlowdown is how much longer than planned a step may take in the
// kernel lab: software emulation is slow.
const vmSlowdown = 10

// vmBootAllowance is the guest's time to boot and to start tunbench.
const vmBootAllowance = 5 * time.Minute

// VMBudget is how long the kernel lab may take for sc's plan: the boot,
// then vmSlowdown times every step's planned time and overhead
// (plan.Estimate, which knows the tests, directions, MSS values, WAN
// conditions and the families each method carries).
func VMBudget(sc scenario.Scenario, reg *method.Registry) (steps int, budget time.Duration) {
	ps := plan.Build(sc, Catalog(reg))
	return len(ps), vmBootAllowance + time.Duration(vmSlowdown*plan.Estimate(ps)*float64(time.Second))
}

// RunVM runs sc on the local testbed inside the kernel lab: a stock
// kernel booted under qemu with this machine's root file system
// (docs/kernel-lab.md). The guest runs this same tunbench binary; its
// results database comes back over the results share and is imported into
// the session's database, so that every cell measured comes back even
// when the guest fails. memoryMiB sizes the guest (the lab's default when
// zero).
func (s *Session) RunVM(ctx context.Context, sc scenario.Scenario, reg *method.Registry, memoryMiB int) (*Result, error) {
	if err := lab.ToolsAvailable(); err != nil {
		return nil, err
	}
	var k lab.Kernel
	var err error
	switch {
	case sc.Kernel != "" && sc.Modules == "":
		return nil, fmt.Errorf("--modules: give the modules directory of %s (its lib/modules/<version>) with --kernel", sc.Kernel)
	case sc.Kernel != "":
		k, err = lab.FromPath(sc.Kernel, sc.Modules)
	default:
		k, err = lab.DefaultKernel(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("guest kernel: %w", err)
	}

	work, err := os.MkdirTemp("", "tunbench-vm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	share := lab.ResultsDir(work)
	if err := os.MkdirAll(share, 0o700); err != nil {
		return nil, err
	}
	// The guest sees the host's root, except /tmp and /run: give it a copy
	// of this binary on the share, wherever this one lives.
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the tunbench binary: %w", err)
	}
	if err := copyFile(exe, filepath.Join(share, "tunbench"), 0o755); err != nil {
		return nil, err
	}
	guest := sc
	guest.Testbed, guest.Kernel, guest.Modules = "local", "", ""
	if err := os.WriteFile(filepath.Join(share, "scenario.yaml"), []byte(guest.YAML()), 0o600); err != nil {
		return nil, err
	}
	g := lab.GuestResultsDir
	// SQLite's WAL needs shared memory, which 9p lacks: the guest keeps its
	// database on its own /tmp and copies it to the share at the end, also
	// after a failure, so every measured cell comes back.
	argv := []string{"/bin/sh", "-c", `"$0" "$@"; rc=$?; cp /tmp/guest.db ` + g + `/guest.db; exit $rc`,
		g + "/tunbench", "run", "-f", g + "/scenario.yaml", "--db", "/tmp/guest.db", "--export", g + "/guest.json", "--quiet"}
	for _, k := range slices.Sorted(maps.Keys(s.opt.Labels)) {
		argv = append(argv, "--label", k+"="+s.opt.Labels[k])
	}
	steps, budget := VMBudget(sc, reg)
	s.notef("booting %s in the kernel lab (%d steps, up to %s)...", k.Version, steps, budget.Round(time.Minute))
	out, err := lab.Run(ctx, lab.Config{Kernel: k, WorkDir: work, MemoryMiB: memoryMiB, Timeout: budget}, lab.Guest{Argv: argv})
	if err != nil {
		return nil, fmt.Errorf("kernel lab: %w", err)
	}
	guestDB := filepath.Join(share, "guest.db")
	var importErr error
	if _, statErr := os.Stat(guestDB); statErr == nil {
		if _, err := s.Store.ImportFile(ctx, guestDB); err != nil {
			importErr = fmt.Errorf("import the guest's results: %w", err)
		}
	}
	if out.ExitCode != 0 && out.ExitCode != ExitCellsFailed {
		return nil, errors.Join(importErr, fmt.Errorf("tunbench in the guest (kernel %s) exited with status %d:\n%s%s",
			k.Version, out.ExitCode, tail(out.Stderr, 40), tail(out.Stdout, 20)))
	}
	if importErr != nil {
		return nil, importErr
	}
	var doc export.Document
	data, err := os.ReadFile(filepath.Join(share, "guest.json"))
	if err == nil {
		err = json.Unmarshal(data, &doc)
	}
	if err != nil {
		return nil, fmt.Errorf("read the guest's export: %w", err)
	}
	run, cells, err := s.Store.Run(ctx, doc.Run.ID)
	if err != nil {
		return nil, err
	}
	res := &Result{Run: run, Cells: cells, Export: s.exportPath(run.ID),
		Lab: &LabBoot{Kernel: k.Version, BootTime: out.BootTime.Seconds(), Emulated: out.Emulated}}
	if err := os.MkdirAll(filepath.Dir(res.Export), 0o755); err != nil {
		return res, fmt.Errorf("write export: %w", err)
	}
	if err := os.WriteFile(res.Export, data, 0o644); err != nil {
		return res, fmt.Errorf("write export: %w", err)
	}
	return res, nil
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
