package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/bed"
	"github.com/tunbench/tunbench/internal/hostinfo"
	"github.com/tunbench/tunbench/internal/method/registry"
	"github.com/tunbench/tunbench/internal/runner"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/store"
)

// selfReport is what "tunbench selfbench" writes.
type selfReport struct {
	Fidelity *runner.FidelityReport `json:"fidelity"`
	Harness  *harnessReport         `json:"harness,omitempty"`
}

type harnessReport struct {
	Scenario  string  `json:"scenario"`
	Cells     int     `json:"cells"`
	WallS     float64 `json:"wall_s"`
	MeasuredS float64 `json:"measured_s"`
	Ratio     float64 `json:"wall_over_measured"`
}

// maxSelfbenchRounds bounds --rounds: each round runs two measurements.
const maxSelfbenchRounds = 100

func newSelfbenchCmd(env bed.Env) *cobra.Command {
	var rounds int
	var dur time.Duration
	var matrix bool
	cmd := &cobra.Command{
		Use:   "selfbench",
		Short: "Measure tunbench itself: fidelity against hand-run iperf3, harness overhead",
		Long: `Measure tunbench itself and print the ratios as JSON (docs/performance.md):

  fidelity: native throughput through tunbench divided by a hand-run
            iperf3 on the same namespace pair, alternating, median of rounds
            (target: at least 0.95).
  harness:  with --matrix, runs the default scenario into a temporary
            database; wall time divided by the sum of the load tools'
            planned durations (target: at most 1.15).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if rounds < 1 || rounds > maxSelfbenchRounds {
				return fmt.Errorf("--rounds %d: use 1 to %d", rounds, maxSelfbenchRounds)
			}
			if dur < time.Second || dur > time.Hour || dur%time.Second != 0 {
				return fmt.Errorf("--duration %s: use whole seconds from 1s to 1h (iperf3 measures whole seconds)", dur)
			}
			if !env.Root() {
				return fmt.Errorf("not running as root: selfbench builds namespaces; run it as root")
			}
			var rep selfReport
			fid, err := runner.Fidelity(ctx, "", rounds, dur)
			if err != nil {
				return fmt.Errorf("fidelity: %w", err)
			}
			rep.Fidelity = fid
			if matrix {
				h, err := harness(cmd)
				if err != nil {
					return fmt.Errorf("harness overhead: %w", err)
				}
				rep.Harness = h
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		},
	}
	cmd.Flags().IntVar(&rounds, "rounds", 5, "rounds of each measurement for the fidelity ratio, 1 to 100")
	cmd.Flags().DurationVar(&dur, "duration", 5*time.Second, "length of each fidelity measurement (whole seconds)")
	cmd.Flags().BoolVar(&matrix, "matrix", false, "also run the default matrix and report the harness overhead (about 3 minutes)")
	return cmd
}

func harness(cmd *cobra.Command) (*harnessReport, error) {
	dir, err := os.MkdirTemp("", "tunbench-selfbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "r.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	host, err := hostinfo.Collect(cmd.Context(), hostinfo.ExecRunner{})
	if err != nil {
		return nil, err
	}
	s := scenario.Default()
	out, err := runner.Run(cmd.Context(), runner.Config{Scenario: s, Methods: registry.Builtin(), Store: st, Host: host, Progress: cmd.ErrOrStderr()})
	if err != nil {
		return nil, err
	}
	return &harnessReport{
		Scenario:  "default",
		Cells:     len(out.Cells),
		WallS:     out.Wall.Seconds(),
		MeasuredS: out.Measured.Seconds(),
		Ratio:     out.Wall.Seconds() / out.Measured.Seconds(),
	}, nil
}
