package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/lab"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/testbed"
)

// dryRun prints the expanded matrix, one line a cell, its size and the
// estimated duration. It creates nothing.
func dryRun(w io.Writer, s scenario.Scenario, reg *method.Registry, stored []result.Cell) error {
	steps := plan.Build(s, runner.Catalog(reg))
	if stored != nil {
		all := len(steps)
		steps = runner.Remaining(steps, stored)
		fmt.Fprintf(w, "resume: %d of %d steps stored, %d to measure\n", all-len(steps), all, len(steps))
	}
	cells := plan.Cells(steps)
	for i, c := range cells {
		fmt.Fprintf(w, "%d %s\n", i+1, c.CellLine())
	}
	var measured float64
	for _, st := range steps {
		measured += st.Measured()
	}
	est := time.Duration(plan.Estimate(steps) * float64(time.Second)).Round(time.Second)
	fmt.Fprintf(w, "%d cells x %d repetitions = %d steps; tests %v; estimated duration %s (load tools %s, plus about %.1f s a step to set up and tear down)\n",
		len(cells), s.Repetitions, len(steps), s.Tests, est,
		time.Duration(measured*float64(time.Second)).Round(time.Second), plan.StepOverhead)
	return nil
}

// matrixFlags are the flags that change the matrix; --resume takes the
// stored scenario and refuses them.
var matrixFlags = []string{"scenario", "methods", "family", "mtu", "offloads", "streams", "duration", "omit", "latency",
	"latency-tool", "reps", "order", "pin", "testbed", "kernel", "modules", "option", "tests", "direction", "mss", "scale", "udp-sizes", "udp-rate", "fragment", "streams-per-process"}

// resumeRun continues a stored run: the same scenario, the same run id,
// only the cells the database lacks; the run is marked done at the end.
func resumeRun(cmd *cobra.Command, f runFlags, reg *method.Registry) error {
	ctx := cmd.Context()
	for _, name := range matrixFlags {
		if f.changed != nil && f.changed(name) {
			return fmt.Errorf("--resume continues the stored scenario of the run: drop --%s", name)
		}
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
	if st.ReadOnly() {
		return fmt.Errorf("results database %s: %w", dbPath, store.ErrReadOnly)
	}
	run, stored, err := st.Run(ctx, f.resume)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	s, err := scenario.Parse([]byte(run.Scenario))
	if err != nil {
		return fmt.Errorf("resume run %s: stored scenario: %w", run.ID, err)
	}
	if err := s.Validate(runner.Catalog(reg)); err != nil {
		return fmt.Errorf("resume run %s: stored scenario is not valid for this tunbench:\n%w", run.ID, indent(err))
	}
	if s.Testbed == "vm" || run.Testbed == "vm" {
		return fmt.Errorf("resume run %s: runs on the vm testbed cannot be resumed yet; start a new run", run.ID)
	}
	if f.dryRun {
		return dryRun(cmd.OutOrStdout(), s, reg, stored)
	}
	if err := preflight(s, reg, hostProbe()); err != nil {
		return err
	}
	if removed, err := testbed.Clean(""); err != nil {
		return fmt.Errorf("clean leftovers of earlier runs: %w", err)
	} else if len(removed) > 0 && !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "removed leftovers of a killed run: %v\n", removed)
	}
	run, stored, err = st.ReopenRun(ctx, run.ID)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	host, err := hostinfo.Collect(ctx, hostinfo.ExecRunner{})
	if err != nil {
		return fmt.Errorf("collect host metadata: %w", err)
	}
	cfg := runner.Config{Scenario: s, Methods: reg, Store: st, Host: host, ID: run.ID, Resume: &run, Stored: stored}
	if os.Getenv(lab.EnvInLab) == "1" {
		cfg.Testbed = "vm"
		cfg.Host.Emulated = cfg.Host.Emulated || os.Getenv(lab.EnvEmulated) == "1"
	}
	return runAndReport(cmd, f, cfg, dbPath)
}
