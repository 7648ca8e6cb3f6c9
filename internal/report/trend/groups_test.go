package trend

import (
	"fmt"
	"testing"

	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
)

// TestGroupsMatchAggregate: what a trend reads of a run's cells (key,
// method, ok repetitions, emulated, busy, and each metric's figure) is
// what summary.Aggregate's rows say, on the fixture database's real runs
// and on the fixtures' synthetic ones (emulated, several tests, failed
// and busy repetitions).
func TestGroupsMatchAggregate(t *testing.T) {
	var runs []RunRecords
	for _, r := range fixture.DB(t) {
		runs = append(runs, RunRecords{r.Run, r.Cells})
	}
	for _, f := range []func() (result.Run, []result.Cell){fixture.LocalRun, fixture.MatrixRun, fixture.EmulatedRun, fixture.TestsRun, fixture.HostCPURun} {
		r, cells := f()
		runs = append(runs, RunRecords{r, cells})
	}
	busy := runOf(1, "6.1.0", 20, true)
	busy.Cells[0].Status, busy.Cells[0].Error = result.StatusFailed, "iperf3: exit status 1"
	busy.Cells[3].Meta.Busy = false
	runs = append(runs, busy)
	checked := 0
	for _, rr := range runs {
		groups := map[string]group{}
		for _, g := range groupCells(rr.Run, rr.Cells, Filter{}) {
			groups[g.key] = g
		}
		rows := summary.Aggregate(rr.Run, rr.Cells)
		n := 0
		for _, row := range rows {
			if row.OK == 0 {
				continue
			}
			n++
			g, ok := groups[row.Key]
			if !ok {
				t.Errorf("run %s: no group for row %s", rr.Run.ID, row.Key)
				continue
			}
			if g.method != row.Method || g.ok != row.OK || g.emulated != row.Emulated || g.busy != row.BackgroundBusy {
				t.Errorf("run %s %s: group %s, %d ok, emulated %v, busy %v; row %s, %d, %v, %v", rr.Run.ID, row.Key,
					g.method, g.ok, g.emulated, g.busy, row.Method, row.OK, row.Emulated, row.BackgroundBusy)
			}
			for m, want := range map[string]stats.Summary{MetricThroughput: row.Throughput.Summary, MetricP50RTT: row.P50RTT.Summary, MetricP99RTT: row.P99RTT.Summary} {
				if got := stats.Summarize(g.values(m)); !sameSummary(got, want) {
					t.Errorf("run %s %s %s: %+v, the row's %+v", rr.Run.ID, row.Key, m, got, want)
				}
			}
			checked++
		}
		if n != len(groups) {
			t.Errorf("run %s: %d groups, %d rows with an ok repetition", rr.Run.ID, len(groups), n)
		}
	}
	if checked < 30 {
		t.Fatalf("%d rows checked: the fixtures lost their cells?", checked)
	}
}

// sameSummary compares two summaries field by field, NaN equal to NaN.
func sameSummary(a, b stats.Summary) bool {
	return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}
