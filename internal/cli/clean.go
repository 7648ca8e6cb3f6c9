package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/testbed"
)

func newCleanCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "clean",
		Short: "Remove what killed runs left behind",
		Long: `Remove what a killed run (kill -9, power loss) left behind: network
namespaces named tunbench-<id>-a/b with every process inside them, the
processes a run recorded, and its private directory under /run/tunbench.
Runs still alive hold a lock and are left alone; nothing else is touched.
tunbench run does the same before it starts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			removed, err := testbed.Clean("")
			for _, r := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", r)
			}
			if err != nil {
				return fmt.Errorf("clean: %w", err)
			}
			if len(removed) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to clean")
			}
			return nil
		},
	}
}
