package cli

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/report/export"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/store"
)

func newResultsCmd() *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "results",
		Short: "List, show and export stored runs",
		Long: `List the stored runs (newest first). "results show" prints a run's table
and "results export" writes its records as JSON or CSV; both read only the
database, so reports regenerate offline. RUN is a run id, a unique prefix of
one, or "latest" (the default).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openStore(db)
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.Runs(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTARTED\tSTATUS\tTESTBED\tKERNEL")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Started.Local().Format(time.DateTime), r.Status, r.Testbed, r.Host.Kernel)
			}
			return tw.Flush()
		},
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "results database (default "+store.DefaultPath()+")")

	show := &cobra.Command{
		Use:   "show [RUN]",
		Short: "Print the comparison table of a stored run",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := openStore(db)
			if err != nil {
				return err
			}
			defer st.Close()
			run, cells, err := st.Run(cmd.Context(), runArg(args))
			if err != nil {
				return err
			}
			return summary.Table(cmd.OutOrStdout(), run, cells, summary.TableOptions{})
		},
	}
	var format, output string
	export := &cobra.Command{
		Use:   "export [RUN]",
		Short: "Export a stored run as JSON (schema in docs/results.md), tidy CSV or wide CSV",
		Long: `Export a stored run. json: the records and the summary (docs/results.md).
csv: tidy, one row per measured value with its metric, unit and every
parameter, ready for pandas or R. csv-wide: one row per repetition with a
column per figure.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "json" && format != "csv" && format != "csv-wide" {
				return fmt.Errorf("--format %q: use json, csv or csv-wide", format)
			}
			st, err := openStore(db)
			if err != nil {
				return err
			}
			defer st.Close()
			run, cells, err := st.Run(cmd.Context(), runArg(args))
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return fmt.Errorf("export: %w", err)
				}
				defer f.Close()
				w = f
			}
			switch format {
			case "csv":
				return export.CSV(w, run, cells)
			case "csv-wide":
				return export.WideCSV(w, run, cells)
			}
			return export.JSON(w, run, cells)
		},
	}
	export.Flags().StringVar(&format, "format", "json", "json, csv (tidy) or csv-wide")
	export.Flags().StringVarP(&output, "output", "o", "-", "file to write, - for stdout")
	cmd.AddCommand(show, export)
	return cmd
}

func runArg(args []string) string {
	if len(args) == 0 {
		return "latest"
	}
	return args[0]
}

func openStore(path string) (*store.Store, error) {
	if path == "" {
		path = store.DefaultPath()
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no results database at %s: run tunbench run first, or pass --db", path)
	}
	st, err := store.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open results database: %w", err)
	}
	return st, nil
}
