package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/rr"
)

// newRRCmd is the hidden entry of the request/response latency tool, which
// the runner starts inside the namespaces as this same binary.
func newRRCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "rr",
		Short:              "TCP request/response latency tool (run by tunbench inside the testbed)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := rr.Main(args, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return fmt.Errorf("rr exited with status %d", code)
			}
			return nil
		},
	}
}
