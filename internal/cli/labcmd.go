package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/lab"
)

func newLabCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Prepare the kernel lab (the vm testbed)",
		Args:  cobra.NoArgs,
	}
	var cache string
	fetch := &cobra.Command{
		Use:   "fetch [PACKAGE]",
		Short: "Download and unpack a Debian kernel package for the lab, without installing it",
		Long: `Download a Debian kernel package with apt-get download, unpack it with
dpkg -x into the cache and run depmod there. The host's kernel is not
touched. Without PACKAGE: the kernel linux-image-amd64 depends on, the one
--testbed vm boots by default. Prints the kernel image and modules paths.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pkg := ""
			if len(args) == 1 {
				pkg = args[0]
			}
			k, err := lab.Fetch(cmd.Context(), cache, pkg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "kernel %s\nimage %s\nmodules %s\n", k.Version, k.Image, k.Modules)
			return nil
		},
	}
	fetch.Flags().StringVar(&cache, "cache", "", "cache directory (default "+lab.DefaultCacheDir()+")")
	cmd.AddCommand(fetch)
	return cmd
}
