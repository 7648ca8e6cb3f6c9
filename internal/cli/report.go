package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/report/compare"
	"github.com/tunbench/tunbench/internal/report/render"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/store"
)

func newReportCmd() *cobra.Command {
	var db, output string
	cmd := &cobra.Command{
		Use:   "report [RUN...]",
		Short: "Write a self-contained HTML report with figures and take-aways",
		Long: `Write one self-contained HTML file (inline figures, styles and script; no
network request) from the results database alone: the summary table
(sortable), figures, take-aways generated from the data, and the environment.
Every figure is also written as SVG and PNG into a directory beside the HTML
(report.html -> report-files/). With several runs, each run after the first
is compared with the first (as "tunbench compare" does) and differences in
the environment are highlighted. RUN is a run id, a unique prefix of one, or
"latest" (the default).`,
		Example: `  tunbench report -o report.html
  tunbench report 601ca0 7be2d1 -o kernels.html`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{store.Latest}
			}
			st, err := openStore(db)
			if err != nil {
				return err
			}
			defer st.Close()
			var runs []render.RunRecords
			seen := map[string]bool{}
			for _, id := range args {
				run, cells, err := st.Run(cmd.Context(), id)
				if err != nil {
					return err
				}
				if seen[run.ID] {
					continue // the same run twice would only repeat itself
				}
				seen[run.ID] = true
				runs = append(runs, render.RunRecords{Run: run, Cells: cells})
			}
			filesDir := render.ReportFilesDir(output)
			b, err := render.Build(runs, filepath.Base(filesDir))
			if err != nil {
				return err
			}
			if err := b.WriteFiles(filesDir); err != nil {
				return err
			}
			f, err := os.Create(output)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			if err := b.WriteHTML(f); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("report: %w", err)
			}
			n := 0
			for _, r := range b.Runs {
				n += len(r.Figures)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s and %d figures (SVG and PNG) in %s\n", output, n, filesDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", dbHelp())
	cmd.Flags().StringVarP(&output, "output", "o", "report.html", "HTML file to write; figures go to <name>-files/ beside it")
	return cmd
}

// exitError carries a process exit status other than 1.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// Exit statuses of "tunbench compare" (errors exit with 1).
const (
	// ExitRegression: a figure regressed beyond the threshold.
	ExitRegression = 2
	// ExitNoCommon: the two runs share no cell; nothing was compared.
	ExitNoCommon = 3
	// ExitLost: a cell ok in run A is missing or failed in run B.
	ExitLost = 4
	// ExitInconclusive: a primary figure changed by more than the
	// threshold but the repetitions cannot decide it; or, with --strict,
	// a primary figure was measured on a busy background or is unstable.
	// (5 is "tunbench run"'s: a cell failed.)
	ExitInconclusive = 6
)

// ExitCellsFailed is the exit status of "tunbench run" when the run went
// through the whole matrix but a cell (a repetition) failed: every other
// cell was still measured and stored. 0 means every cell is ok (methods
// --skip-unavailable named are not failures); 1 an error that stopped
// the run (bad input, a refused requirement, an interruption).
const ExitCellsFailed = runner.ExitCellsFailed

func newCompareCmd() *cobra.Command {
	var (
		db, threshold string
		confidence    float64
		asJSON        bool
		allowMissing  bool
		strict        bool
	)
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs cell by cell: better, worse, no significant change or inconclusive",
		Long: `Compare run B with run A (for example the same scenario on two kernels):
for every cell in both runs, each figure's means, the change in percent, and a
verdict from Welch's t-test at the stated confidence, never from the raw
means: better or worse when the test finds the change; no significant
change when it does not and the change is within --threshold; inconclusive
when it does not but the change is larger, with the repetitions per run it
would take at the observed spread to decide it.

Each test's primary figure decides (throughput for tcp_stream and parallel,
the p50 RTT for tcp_rr, the times of connect and recover); secondary
figures (p99 RTT, Gbit/s per core, requests lost, rekey outage) are shown
but never decide, so a better p99 RTT never makes a throughput loss a pass.
Primary figures measured on a busy background or unstable (CV above 10%)
are said under the verdict; --strict makes them fail the gate.

Cells present in only one run are listed, and so are the cells that were ok
in run A but are missing from run B or failed in every repetition there
("lost": a method that stopped working is the worst regression).

Exit status, so that a CI pipeline can gate on it:
  0  pass: no primary figure regressed or is inconclusive, no cell was lost
  1  an error (bad arguments, unknown run, unreadable database)
  2  regression: a primary figure is significantly worse by more than --threshold
  3  no common cells: the runs share no cell, nothing was compared
  4  lost: a cell ok in run A is missing or failed in run B (outranks 2 and 6);
     --allow-missing accepts lost cells for a matrix changed on purpose
  6  inconclusive: a primary figure changed by more than --threshold and the
     repetitions cannot decide it (run more); with --strict also a primary
     figure measured on a busy background or unstable`,
		Example: `  tunbench compare 601ca0 7be2d1
  tunbench compare 601ca0 latest --threshold 10% --json
  tunbench compare 601ca0 latest --strict`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			th, err := parsePercent(threshold)
			if err != nil {
				return fmt.Errorf("--threshold: %w", err)
			}
			if confidence <= 0 || confidence >= 1 {
				return fmt.Errorf("--confidence %g: use a level between 0 and 1, e.g. 0.95", confidence)
			}
			st, err := openStore(db)
			if err != nil {
				return err
			}
			defer st.Close()
			runA, cellsA, err := st.Run(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			runB, cellsB, err := st.Run(cmd.Context(), args[1])
			if err != nil {
				return err
			}
			c := compare.Compare(runA, cellsA, runB, cellsB, compare.CompareOptions{Confidence: confidence, ThresholdPercent: th, AllowMissing: allowMissing, Strict: strict})
			if asJSON {
				err = compare.ComparisonJSON(cmd.OutOrStdout(), c)
			} else {
				err = compare.WriteComparison(cmd.OutOrStdout(), c)
			}
			if err != nil {
				return err
			}
			switch c.Outcome {
			case compare.OutcomeNoCommon:
				return &exitError{code: ExitNoCommon, err: fmt.Errorf("compare: runs %s and %s have no cell in common, so nothing was compared; compare runs of the same matrix", runA.ID, runB.ID)}
			case compare.OutcomeLost:
				return &exitError{code: ExitLost, err: fmt.Errorf("compare: %d cell(s) ok in run %s are missing or failed in run %s; --allow-missing accepts them if the matrix changed on purpose",
					len(c.Lost), runA.ID, runB.ID)}
			case compare.OutcomeRegression:
				return &exitError{code: ExitRegression, err: fmt.Errorf("compare: %d figure(s) of run %s regress by more than %s against run %s",
					c.Regressions, runB.ID, threshold, runA.ID)}
			case compare.OutcomeInconclusive:
				if c.Inconclusive > 0 {
					return &exitError{code: ExitInconclusive, err: fmt.Errorf("compare: %d primary figure(s) of run %s changed by more than %s against run %s, which the repetitions cannot decide: run both with more --reps",
						c.Inconclusive, runB.ID, threshold, runA.ID)}
				}
				return &exitError{code: ExitInconclusive, err: fmt.Errorf("compare: --strict: %s", strings.Join(c.Doubts, "; "))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&db, "db", "", dbHelp())
	cmd.Flags().StringVar(&threshold, "threshold", "5%", "a significantly worse figure regresses when it changes by more than this")
	cmd.Flags().Float64Var(&confidence, "confidence", compare.DefaultConfidence, "two-sided confidence level of the t-test")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	cmd.Flags().BoolVar(&allowMissing, "allow-missing", false, "accept cells ok in run A that are missing or failed in run B (list them, exit 0 unless a figure regressed)")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail the gate (exit 6) when a primary figure was measured on a busy background or is unstable in either run")
	return cmd
}

// parsePercent reads "5%" or "5" as 5.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v <= 0 {
		return 0, errors.New("want a positive percentage such as 5%")
	}
	return v, nil
}
