package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/udpgen"
)

// newUDPGenCmd is the hidden entry of the timestamped UDP load generator,
// which the runner starts inside the namespaces as this same binary.
func newUDPGenCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "udpgen",
		Short:              "timestamped UDP load generator (run by tunbench inside the testbed)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := udpgen.Main(args, cmd.OutOrStdout(), cmd.ErrOrStderr()); code != 0 {
				return fmt.Errorf("udpgen exited with status %d", code)
			}
			return nil
		},
	}
}
