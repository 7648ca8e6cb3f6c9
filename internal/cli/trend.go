package cli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tunbench/tunbench/internal/report/trend"
	"github.com/tunbench/tunbench/internal/store"
)

// ExitTrendRegression is the exit status of "tunbench trend
// --fail-on-regression" when a series has an unacknowledged regression.
const ExitTrendRegression = 2

func newTrendCmd() *cobra.Command {
	var (
		db, since, condition, threshold, ack, note string
		labels                                     []string
		f                                          trend.Filter
		maxP                                       float64
		asJSON, failOnRegression, record, busy     bool
	)
	cmd := &cobra.Command{
		Use:   "trend",
		Short: "Series of stored runs over time, their change points and what changed between",
		Long: `Group the stored runs' cells into series, one per figure (throughput, p50
and p99 RTT) of one cell key (method and condition: family, MTU, offloads,
streams, direction, MSS, congestion control, WAN, options) on one machine
and testbed, in the order the runs started, and find where each series
changed: E-divisive means with Student's t-test, as Hunter and Apache
Otava do (docs/results.md). For each change point: its size, p, the last
run before and the first after, and what differed between them (kernel,
tool versions, labels).

Noise is handled as the report does: a run measured while the machine was
busy, or under software emulation, is shown but left out of the detection
(--include-busy counts busy runs, noting them, on a machine never idle);
a change is claimed only at p <= --max-p and at least --threshold; a
change next to an unstable run (CV over 10%) says so.

Exit status: 0, or 2 with --fail-on-regression when a series has a
regression not acknowledged with --ack (1 on errors).`,
		Example: `  tunbench trend
  tunbench trend --method vxlan --condition offloads-off --since 30d
  tunbench trend --fail-on-regression --record
  tunbench trend --ack 3f2a9c1d0e4b --note "rate limit on purpose"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if f.Since, err = trend.ParseSince(since, time.Now()); err != nil {
				return err
			}
			if f.Labels, err = trend.ParseLabels(labels); err != nil {
				return err
			}
			if condition != "" {
				f.Condition = strings.Split(condition, ",")
			}
			if f.Metric != "" && !slices.Contains(trend.Metrics, f.Metric) {
				return fmt.Errorf("--metric %q: use one of %s", f.Metric, strings.Join(trend.Metrics, ", "))
			}
			th, err := parsePercent(threshold)
			if err != nil {
				return fmt.Errorf("--threshold: %w", err)
			}
			if maxP <= 0 || maxP >= 1 {
				return fmt.Errorf("--max-p %g: use a p-value between 0 and 1, e.g. 0.001", maxP)
			}
			if ack != "" && !changeIDPattern.MatchString(ack) {
				return fmt.Errorf("--ack %q: a change id is the 12 hex digits tunbench trend prints after \"change\"", ack)
			}
			st, err := openStore(db)
			if err != nil {
				return err
			}
			defer st.Close()
			ctx := cmd.Context()
			if ack != "" {
				if err := st.Ack(ctx, ack, note, time.Now()); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "change %s acknowledged: --fail-on-regression no longer fails on it\n", ack)
				return nil
			}
			series, err := LoadTrend(ctx, st, trend.Options{Filter: f, MaxP: maxP, ThresholdPercent: th, IncludeBusy: busy})
			if err != nil {
				return err
			}
			if record {
				if err := st.RecordChangePoints(ctx, ChangePointRows(series)); err != nil {
					return err
				}
			}
			if asJSON {
				err = trend.JSON(cmd.OutOrStdout(), series)
			} else {
				err = trend.Write(cmd.OutOrStdout(), series)
			}
			if err != nil {
				return err
			}
			if n := trend.Regressions(series); failOnRegression && n > 0 {
				return &exitError{code: ExitTrendRegression, err: fmt.Errorf("trend: %d unacknowledged regression(s); acknowledge a known one with --ack CHANGE", n)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&db, "db", "", "results database (default "+store.DefaultPath()+")")
	fl.StringVar(&f.Method, "method", "", "only this method")
	fl.StringVar(&f.Testbed, "testbed", "", "only runs on this testbed (local, vm, ssh, kubernetes)")
	fl.StringVar(&f.Machine, "machine", "", "only runs on this machine (host name)")
	fl.StringVar(&condition, "condition", "", "only cell keys with every one of these parts, comma-separated (e.g. offloads-off,mtu9000,cc-bbr)")
	fl.StringArrayVar(&labels, "label", nil, "only runs with this label, key=value (repeatable)")
	fl.StringVar(&f.Metric, "metric", "", "only this figure: "+strings.Join(trend.Metrics, ", "))
	fl.StringVar(&since, "since", "", "only runs started since: a date (2026-01-31), a time (RFC 3339) or an age (36h, 7d)")
	fl.StringVar(&threshold, "threshold", strconv.Itoa(trend.DefaultThresholdPercent)+"%", "claim only changes of at least this much")
	fl.Float64Var(&maxP, "max-p", 0.001, "claim only changes whose t-test p is at most this")
	fl.BoolVar(&busy, "include-busy", false, "count runs measured while the machine was busy (noted), for a machine that is never idle")
	fl.BoolVar(&asJSON, "json", false, "print the series as JSON")
	fl.BoolVar(&failOnRegression, "fail-on-regression", false, "exit 2 when a series has an unacknowledged regression")
	fl.BoolVar(&record, "record", false, "store the change points found in the database's change_points table (Grafana's annotations)")
	fl.StringVar(&ack, "ack", "", "acknowledge change CHANGE as known, and exit")
	fl.StringVar(&note, "note", "", "with --ack: why the change is known")
	return cmd
}

var changeIDPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)

// LoadTrend reads the runs that pass o's run filters, with their cells
// that pass its method and condition, and the acknowledged changes, and
// builds the series.
func LoadTrend(ctx context.Context, st *store.Store, o trend.Options) ([]trend.Series, error) {
	recs, err := trendRecords(ctx, st, o.Filter)
	if err != nil {
		return nil, err
	}
	if o.Acked, err = st.Acks(ctx); err != nil {
		return nil, err
	}
	return trend.Build(recs, o), nil
}

// trendRecords reads what trend.Build needs of the runs f selects: the
// filters the store can apply are applied there, the rest by
// f.SelectRun before any cell is decoded (and trend.Build filters again).
func trendRecords(ctx context.Context, st *store.Store, f trend.Filter) ([]trend.RunRecords, error) {
	runs, err := st.RunsWithCells(ctx, store.RunQuery{Testbed: f.Testbed, Machine: f.Machine, Since: f.Since, Method: f.Method,
		KeyParts: f.Condition, FiguresOnly: true, Keep: f.SelectRun})
	if err != nil {
		return nil, err
	}
	recs := make([]trend.RunRecords, len(runs))
	for i, r := range runs {
		recs[i] = trend.RunRecords{Run: r.Run, Cells: r.Cells}
	}
	return recs, nil
}

// ChangePointRows turns the series' change points into change_points rows.
func ChangePointRows(series []trend.Series) []store.ChangePoint {
	var out []store.ChangePoint
	for _, s := range series {
		for _, c := range s.Changes {
			out = append(out, store.ChangePoint{
				ID: c.ID, Series: s.ID, Key: s.Key, Metric: s.Metric, Machine: s.Machine, Testbed: s.Testbed,
				Time: c.AfterTime, LastRun: c.LastBefore, FirstRun: c.FirstAfter,
				Before: c.Before, After: c.After, Percent: c.Percent, P: c.P, Regression: c.Regression,
				Summary: fmt.Sprintf("%s %s %+.1f%% (%s -> %s)", s.Key, trend.MetricName(s.Metric), c.Percent,
					trend.Value(c.Before, s.Unit), trend.Value(c.After, s.Unit)),
			})
		}
	}
	return out
}
