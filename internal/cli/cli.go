// Package cli is the tunbench command line: it parses arguments, checks
// input before anything is created, and calls the packages that do the
// work. main only calls Run, so the whole CLI is testable.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/bed"
)

// Run executes the tunbench command line with args (without the program
// name) and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runOn(ctx, bed.Host(Version(), BuildID), args, stdout, stderr)
}

// runOn is Run on the machine env describes: this one (bed.Host), or a
// test's fake.
func runOn(ctx context.Context, env bed.Env, args []string, stdout, stderr io.Writer) int {
	root := newRoot(env, stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "tunbench: %v\n", err)
		if e, ok := errors.AsType[*exitError](err); ok {
			return e.code
		}
		return 1
	}
	return 0
}

func newRoot(env bed.Env, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "tunbench",
		Short: "Measure what a tunnel or encryption method costs on your machines",
		Long: `tunbench sets up tunnelling and encryption methods between two endpoints,
drives real load through them (iperf3 and a TCP request/response test),
measures throughput, latency, retransmits and CPU cost, stores every result
in SQLite (or a team's PostgreSQL: --db postgres://...), prints a
comparison table, and tears everything down again.

By default the endpoints are two network namespaces on this machine joined
by a veth pair. It must run as root.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRRCmd(), newUDPGenCmd(), newLabCmd(), newRunCmd(env), newMethodsCmd(env), newResultsCmd(), newReportCmd(), newCompareCmd(), newTrendCmd(), newServeCmd(), newCleanCmd(env), newSelfbenchCmd(env), newEBPFCmd(env), newVersionCmd(), newAgentCmd())
	return root
}
