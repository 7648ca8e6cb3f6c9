package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	testbeds "github.com/tunbench/tunbench/internal/bed/registry"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
)

// dryRun prints the expanded matrix, one line a cell, its size and the
// estimated duration. It creates nothing.
func dryRun(w io.Writer, s scenario.Scenario, reg *method.Registry, stored []result.Cell) error {
	steps := plan.Build(s, testbeds.Catalog(reg))
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
	tunnels := ""
	if t := plan.TunnelsEstimate(steps); t > 0 {
		tunnels = fmt.Sprintf(", plus an estimated %s to set up and tear down the tunnels of the tunnels dimension (docs/scale.md)",
			time.Duration(t*float64(time.Second)).Round(time.Second))
	}
	fmt.Fprintf(w, "%d cells x %d repetitions = %d steps; tests %v; estimated duration %s (load tools %s, plus about %.1f s a step to set up and tear down%s)\n",
		len(cells), s.Repetitions, len(steps), s.Tests, est,
		time.Duration(measured*float64(time.Second)).Round(time.Second), plan.StepOverhead, tunnels)
	return nil
}

// matrixFlags are the flags that change the matrix; --resume takes the
// stored scenario and refuses them.
var matrixFlags = []string{"scenario", "methods", "family", "mtu", "offloads", "streams", "duration", "omit", "latency",
	"latency-tool", "reps", "order", "pin", "testbed", "kernel", "modules", "option", "tests", "direction", "mss", "cc", "tunnels", "scale", "udp-sizes", "udp-rate", "fragment", "streams-per-process", "skip-unavailable"}

// resumeRun continues a stored run: the same scenario, the same run id,
// only the cells the database lacks; the run is marked done at the end.
func resumeRun(cmd *cobra.Command, f runFlags, reg *method.Registry) error {
	for _, name := range matrixFlags {
		if f.changed != nil && f.changed(name) {
			return fmt.Errorf("--resume continues the stored scenario of the run: drop --%s", name)
		}
	}
	if f.changed != nil && f.changed("label") {
		return errors.New("--resume keeps the labels the run was started with: drop --label")
	}
	sess, err := openSession(cmd, f, reg)
	if err != nil {
		return err
	}
	defer sess.Close()
	run, stored, s, err := sess.Stored(cmd.Context(), f.resume, reg)
	if err != nil {
		return err
	}
	for _, name := range []string{s.Testbed, run.Testbed} {
		if tb, err := testbeds.Lookup(name); err == nil && tb.Lab {
			return fmt.Errorf("resume run %s: runs on the %s testbed cannot be resumed yet; start a new run", run.ID, tb.Name)
		}
	}
	if f.dryRun {
		return dryRun(cmd.OutOrStdout(), s, reg, stored)
	}
	if err := checkHere(s, reg, f.env); err != nil {
		return err
	}
	res, err := sess.Resume(cmd.Context(), run.ID, reg)
	return finishRun(cmd, f, sess, res, err)
}
