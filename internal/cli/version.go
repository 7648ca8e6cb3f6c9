package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the tunbench version: the module version, or the VCS revision
// of a development build.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel-" + s.Value[:12]
		}
	}
	return "devel"
}

func newVersionCmd() *cobra.Command {
	var build bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the tunbench version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			if build {
				fmt.Fprintln(cmd.OutOrStdout(), BuildID())
				return
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tunbench %s (%s)\n", Version(), runtime.Version())
		},
	}
	cmd.Flags().BoolVar(&build, "build-id", false, "print the build identity (version and executable hash) that an ssh testbed's agents must share")
	return cmd
}
