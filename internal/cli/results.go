package cli

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
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
		Short: "List, show, export and push stored runs",
		Long: `List the stored runs (newest first), with their labels. "results show"
prints a run's table and "results export" writes its records as JSON or CSV;
both read only the database, so reports regenerate offline. "results push"
copies runs to another database, a team's PostgreSQL. RUN is a run id, a
unique prefix of one, or "latest" (the default).

The database is --db, else $` + store.EnvDB + `, else the default file: a SQLite
file path or a postgres:// URL (docs/results.md).`,
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
			fmt.Fprintln(tw, "RUN\tSTARTED\tSTATUS\tTESTBED\tKERNEL\tLABELS")
			for _, r := range runs {
				var labels []string
				for _, k := range slices.Sorted(maps.Keys(r.Labels)) {
					labels = append(labels, k+"="+r.Labels[k])
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Started.Local().Format(time.DateTime), r.Status, r.Testbed, r.Host.Kernel, strings.Join(labels, ","))
			}
			return tw.Flush()
		},
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", dbHelp())

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
	cmd.AddCommand(show, export, newPushCmd(&db))
	return cmd
}

func newPushCmd(db *string) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "push RUN... --to postgres://...",
		Short: "Copy runs from this results database to another (a team's PostgreSQL)",
		Long: `Copy stored runs, with all their cells and labels, from the results
database (--db, $` + store.EnvDB + `, or the default file) to the database --to
names, usually a team's PostgreSQL database, so that a laptop's or a CI
runner's results join everyone else's. RUN is a run id, a unique prefix of
one, or "latest".

Runs are matched by id: a run the target already has is left alone, so a
push repeated copies nothing the second time. Each run is copied in one
transaction: a push interrupted half way (killed, the connection lost)
leaves every run on the target whole or absent, and pushing again completes
it. A run still running (or killed without --resume) is refused.`,
		Example: `  tunbench results push latest --to postgres://tunbench@db.example:5432/results
  tunbench results push 601ca0 7be2d1 --db ci.db --to postgresql://ci@db.example/results?sslmode=require`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return fmt.Errorf("--to: name the database to push to (%s)", store.AcceptedForms)
			}
			if _, err := store.ParseLocation(to); err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			src, err := openStore(*db)
			if err != nil {
				return err
			}
			defer src.Close()
			dst, err := store.Open(to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			defer dst.Close()
			if dst.Path() == src.Path() {
				return fmt.Errorf("--to: %s is the database the runs come from", dst.Path())
			}
			st, err := src.Push(cmd.Context(), dst, args)
			if st.Runs > 0 || len(st.Skipped) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "pushed %d run(s) with %d cell(s) to %s", st.Runs, st.Cells, dst.Path())
				if len(st.Skipped) > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "; already there, left alone: %s", strings.Join(st.Skipped, ", "))
				}
				fmt.Fprintln(cmd.OutOrStdout())
			}
			return err
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the database to copy the runs to: a postgres:// URL or a SQLite file")
	return cmd
}

func runArg(args []string) string {
	if len(args) == 0 {
		return "latest"
	}
	return args[0]
}

// dbHelp is the --db flag's help.
func dbHelp() string {
	return "results database: a SQLite file or a postgres:// URL (default $" + store.EnvDB + ", else " + store.DefaultPath() + ")"
}

// checkDB refuses, before anything is created, a --db value (or, without
// one, a TUNBENCH_DB value) that is neither a file path nor a supported
// URL, naming the forms that are accepted.
func checkDB(flag string) error {
	name, v := "--db", flag
	if v == "" {
		if v = os.Getenv(store.EnvDB); v == "" {
			return nil
		}
		name = store.EnvDB
	}
	if _, err := store.ParseLocation(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// openStore opens an existing results database for reading and writing
// what the command writes.
func openStore(path string) (*store.Store, error) {
	if err := checkDB(path); err != nil {
		return nil, err
	}
	if path == "" {
		path = store.DefaultDB()
	}
	if loc, _ := store.ParseLocation(path); loc.Postgres {
		st, err := store.Open(path)
		if err != nil {
			return nil, fmt.Errorf("open results database: %w", err)
		}
		return st, nil
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
