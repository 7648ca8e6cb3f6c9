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
)

// Run executes the tunbench command line with args (without the program
// name) and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
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

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "tunbench",
		Short: "Measure what a tunnel or encryption method costs on your machines",
		Long: `tunbench sets up tunnelling and encryption methods between two endpoints,
drives real load through them (iperf3 and a TCP request/response test),
measures throughput, latency, retransmits and CPU cost, stores every result
in SQLite, prints a comparison table, and tears everything down again.

By default the endpoints are two network namespaces on this machine joined
by a veth pair. It must run as root.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newRRCmd(), newUDPGenCmd(), newLabCmd(), newRunCmd(), newMethodsCmd(), newResultsCmd(), newReportCmd(), newCompareCmd(), newCleanCmd(), newSelfbenchCmd(), newEBPFCmd(), newVersionCmd(), newAgentCmd())
	return root
}
