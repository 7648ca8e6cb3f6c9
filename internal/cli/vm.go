package cli

import (
	"errors"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/scenario"
)

func runVM(cmd *cobra.Command, f runFlags, s scenario.Scenario) error {
	_, _, _ = cmd, f, s
	return errors.New("testbed vm: the kernel lab is being wired in")
}
