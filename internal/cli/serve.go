package cli

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/report/serve"
	"github.com/tunbench/tunbench/internal/store"
)

func newServeCmd() *cobra.Command {
	var db, addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "A read-only web view of the stored runs, reports, comparisons and trends",
		Long: `Serve a read-only web view of a results database: the runs (filter by
method, testbed, machine, kernel and label), a run's report (as "tunbench
report" writes it), two runs compared, and each series' trend with its
change points marked and linked to their runs. Pages are rendered on the
server and load nothing from elsewhere. It listens on --addr, the loopback
address unless told otherwise, until interrupted.`,
		Example: `  tunbench serve
  tunbench serve --addr 127.0.0.1:9090 --db results.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := serve.CheckAddr(addr); err != nil {
				return err
			}
			st, err := openStore(db)
			if err != nil {
				return err
			}
			defer st.Close()
			return serve.Serve(cmd.Context(), st, addr, func(a net.Addr) {
				fmt.Fprintf(cmd.OutOrStdout(), "serving %s on http://%s/ (read-only; interrupt to stop)\n", st.Path(), a)
			})
		},
	}
	cmd.Flags().StringVar(&db, "db", "", "results database (default "+store.DefaultPath()+")")
	cmd.Flags().StringVar(&addr, "addr", serve.DefaultAddr, "host:port to listen on (a wildcard address such as 0.0.0.0:8080 serves every interface)")
	return cmd
}
