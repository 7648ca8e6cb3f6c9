package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/report"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
)

// runVM runs the scenario on the local testbed inside the kernel lab: a
// stock kernel booted under qemu with this machine's root file system. The
// guest runs this same tunbench binary; its results database comes back
// over the results share and is imported into the host's database, marked
// with the guest's kernel and, under software emulation, "emulated".
func runVM(cmd *cobra.Command, f runFlags, s scenario.Scenario) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := lab.ToolsAvailable(); err != nil {
		return err
	}
	var k lab.Kernel
	var err error
	switch {
	case s.Kernel != "" && s.Modules == "":
		return fmt.Errorf("--modules: give the modules directory of %s (its lib/modules/<version>) with --kernel", s.Kernel)
	case s.Kernel != "":
		k, err = lab.FromPath(s.Kernel, s.Modules)
	default:
		k, err = lab.DefaultKernel(ctx)
	}
	if err != nil {
		return fmt.Errorf("guest kernel: %w", err)
	}
	dbPath := f.db
	if dbPath == "" {
		dbPath = store.DefaultPath()
	}
	st, err := store.Open(dbPath)
	if err != nil {
		return fmt.Errorf("open results database: %w", err)
	}
	defer st.Close()

	work, err := os.MkdirTemp("", "tunbench-vm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	share := lab.ResultsDir(work)
	if err := os.MkdirAll(share, 0o700); err != nil {
		return err
	}
	// The guest sees the host's root, except /tmp and /run: give it a copy
	// of this binary on the share, wherever this one lives.
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the tunbench binary: %w", err)
	}
	if err := copyFile(exe, filepath.Join(share, "tunbench"), 0o755); err != nil {
		return err
	}
	guest := s
	guest.Testbed, guest.Kernel, guest.Modules = "local", "", ""
	if err := os.WriteFile(filepath.Join(share, "scenario.yaml"), []byte(guest.YAML()), 0o600); err != nil {
		return err
	}
	g := lab.GuestResultsDir
	// SQLite's WAL needs shared memory, which 9p lacks: the guest keeps its
	// database on its own /tmp and copies it to the share at the end, also
	// after a failure, so every measured cell comes back.
	argv := []string{"/bin/sh", "-c", `"$0" "$@"; rc=$?; cp /tmp/guest.db ` + g + `/guest.db; exit $rc`,
		g + "/tunbench", "run", "-f", g + "/scenario.yaml", "--db", "/tmp/guest.db", "--export", g + "/guest.json", "--quiet"}
	// Emulation is slow: allow ten times the planned time, plus boot.
	steps := len(s.Methods) * len(s.Families) * len(s.MTUs) * len(s.Offloads) * len(s.Streams) * s.Repetitions
	t := s.Times()
	budget := 5*time.Minute + time.Duration(steps)*10*(t.Duration+t.Omit+t.Latency+5*time.Second)
	if !f.quiet {
		fmt.Fprintf(stderr, "booting %s in the kernel lab (%d steps, up to %s)...\n", k.Version, steps, budget.Round(time.Minute))
	}
	out, err := lab.Run(ctx, lab.Config{Kernel: k, WorkDir: work, MemoryMiB: f.vmMemory, Timeout: budget}, lab.Guest{Argv: argv})
	if err != nil {
		return fmt.Errorf("kernel lab: %w", err)
	}
	guestDB := filepath.Join(share, "guest.db")
	var importErr error
	if _, statErr := os.Stat(guestDB); statErr == nil {
		if _, err := st.ImportFile(ctx, guestDB); err != nil {
			importErr = fmt.Errorf("import the guest's results: %w", err)
		}
	}
	if out.ExitCode != 0 {
		return errors.Join(importErr, fmt.Errorf("tunbench in the guest (kernel %s) exited with status %d:\n%s%s",
			k.Version, out.ExitCode, tail(out.Stderr, 40), tail(out.Stdout, 20)))
	}
	if importErr != nil {
		return importErr
	}
	var doc report.Document
	data, err := os.ReadFile(filepath.Join(share, "guest.json"))
	if err == nil {
		err = json.Unmarshal(data, &doc)
	}
	if err != nil {
		return fmt.Errorf("read the guest's export: %w", err)
	}
	run, cells, err := st.Run(ctx, doc.Run.ID)
	if err != nil {
		return err
	}
	exportPath := f.export
	if exportPath == "" {
		exportPath = filepath.Join(filepath.Dir(dbPath), "exports", run.ID+".json")
	}
	if err := os.MkdirAll(filepath.Dir(exportPath), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(exportPath, data, 0o644); err != nil {
		return fmt.Errorf("write export: %w", err)
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report.NewDocument(run, cells)); err != nil {
			return err
		}
	} else if err := report.Table(stdout, run, cells, report.TableOptions{}); err != nil {
		return err
	}
	if !f.quiet {
		fmt.Fprintf(stderr, "\nrun %s in the kernel lab (kernel %s, boot %.1f s, emulated %v); database %s; export %s\n",
			run.ID, k.Version, out.BootTime.Seconds(), out.Emulated, dbPath, exportPath)
	}
	return nil
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
