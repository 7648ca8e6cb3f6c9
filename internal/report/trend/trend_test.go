package trend

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/result"
)

var t0 = time.Date(2026, 1, 5, 2, 0, 0, 0, time.UTC)

// runOf is run i of a nightly series on machine bench1: two methods, three
// repetitions each, native at gbps and vxlan steady at 10 Gbit/s.
func runOf(i int, kernel string, gbps float64, busy bool) RunRecords {
	id := fmt.Sprintf("r%02d", i)
	r := result.Run{ID: id, Started: t0.AddDate(0, 0, i), Testbed: "local", Status: result.RunDone,
		Host: result.Host{Hostname: "bench1", Kernel: kernel, Tools: map[string]string{"iperf3": "3.12"}}}
	var cells []result.Cell
	for rep := 1; rep <= 3; rep++ {
		for _, m := range []struct {
			name string
			g    float64
		}{{"native", gbps}, {"vxlan", 10}} {
			wiggle := 1 + 0.02*float64(rep-2)
			cells = append(cells, result.Cell{RunID: id, Key: m.name + "/ipv4/mtu1500/offloads-on/p1", Method: m.name, Repetition: rep,
				Status: result.StatusOK, Throughput: &result.Throughput{BitsPerSecond: m.g * 1e9 * wiggle},
				Latency: &result.Latency{P50: 50 * wiggle, P99: 90 * wiggle}, Meta: result.Meta{Busy: busy}})
		}
	}
	return RunRecords{Run: r, Cells: cells}
}

func nightly() []RunRecords {
	var runs []RunRecords
	for i := range 10 {
		kernel, g := "6.1.0", 20.0
		if i >= 6 {
			kernel, g = "6.12.0", 12.0
		}
		runs = append(runs, runOf(i, kernel, g, false))
	}
	return runs
}

func TestRegressionAtKernelChange(t *testing.T) {
	series := Build(nightly(), Options{Filter: Filter{Metric: MetricThroughput}})
	if len(series) != 2 {
		t.Fatalf("%d series, want native and vxlan throughput", len(series))
	}
	nat, vx := series[0], series[1]
	if nat.Method != "native" || len(nat.Points) != 10 || len(vx.Changes) != 0 {
		t.Fatalf("series %+v / %+v", nat, vx)
	}
	if len(nat.Changes) != 1 {
		t.Fatalf("native changes %+v, want one", nat.Changes)
	}
	c := nat.Changes[0]
	want := Change{ID: ChangeID(nat.ID, "r06"), Index: 6, Before: 20, After: 12, Percent: -40, P: c.P, NBefore: 6, NAfter: 4,
		Regression: true, LastBefore: "r05", FirstAfter: "r06", BeforeTime: t0.AddDate(0, 0, 5), AfterTime: t0.AddDate(0, 0, 6),
		Differences: []Difference{{"kernel", "6.1.0", "6.12.0"}}}
	if diff := cmp.Diff(want, c, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })); diff != "" {
		t.Errorf("change (-want +got):\n%s", diff)
	}
	if c.P > 0.001 || Regressions(series) != 1 {
		t.Errorf("p %g, regressions %d", c.P, Regressions(series))
	}
	// Acknowledged, it no longer counts.
	acked := Build(nightly(), Options{Acked: map[string]bool{c.ID: true}})
	if Regressions(acked) != 0 {
		t.Errorf("regressions after ack: %d, want 0", Regressions(acked))
	}
	var b bytes.Buffer
	if err := Write(&b, series); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"change " + c.ID + ": -40.0% (20 Gbit/s -> 12 Gbit/s", "REGRESSION", "last run before: r05", "first run after: r06", "changed between: kernel 6.1.0 -> 6.12.0"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, b.String())
		}
	}
}

// A latency series that rises is a regression; one that falls is not.
func TestLatencyDirection(t *testing.T) {
	runs := nightly()
	for i := range runs {
		for j := range runs[i].Cells {
			if i >= 6 {
				runs[i].Cells[j].Latency.P50 *= 2
			}
		}
	}
	s := Build(runs, Options{Filter: Filter{Method: "vxlan", Metric: MetricP50RTT}})
	if len(s) != 1 || len(s[0].Changes) != 1 || !s[0].Changes[0].Regression || s[0].Changes[0].Percent < 99 {
		t.Fatalf("p50 series %+v", s)
	}
}

// Busy runs are left out (and with them a spurious drop); with
// IncludeBusy they count and the change says so.
func TestBusyRunsLeftOut(t *testing.T) {
	var runs []RunRecords
	for i := range 10 {
		g, busy := 20.0, false
		if i >= 6 {
			g, busy = 10, true // a busy machine halves it: not the method's fault
		}
		runs = append(runs, runOf(i, "6.1.0", g, busy))
	}
	s := Build(runs, Options{Filter: Filter{Method: "native", Metric: MetricThroughput}})
	if len(s) != 1 || len(s[0].Changes) != 0 || s[0].Points[7].Excluded != "busy" {
		t.Fatalf("busy runs: %+v", s)
	}
	s = Build(runs, Options{Filter: Filter{Method: "native", Metric: MetricThroughput}, IncludeBusy: true})
	if len(s[0].Changes) != 1 || !strings.Contains(strings.Join(s[0].Changes[0].Notes, "; "), "busy") {
		t.Fatalf("with IncludeBusy: %+v", s[0].Changes)
	}
}

// A change smaller than the threshold is not claimed.
func TestThreshold(t *testing.T) {
	var runs []RunRecords
	for i := range 12 {
		g := 20.0
		if i >= 6 {
			g = 19.4 // -3%, significant over these tidy repetitions, below 5%
		}
		runs = append(runs, runOf(i, "6.1.0", g, false))
	}
	s := Build(runs, Options{Filter: Filter{Method: "native", Metric: MetricThroughput}})
	if len(s[0].Changes) != 0 {
		t.Errorf("a 3%% change claimed at the default 5%% threshold: %+v", s[0].Changes)
	}
	s = Build(runs, Options{Filter: Filter{Method: "native", Metric: MetricThroughput}, ThresholdPercent: 1})
	if len(s[0].Changes) != 1 {
		t.Errorf("a 3%% change at a 1%% threshold: %+v", s[0].Changes)
	}
}

func TestFilters(t *testing.T) {
	runs := nightly()
	for _, tc := range []struct {
		f    Filter
		want int
	}{
		{Filter{}, 6},
		{Filter{Method: "vxlan"}, 3},
		{Filter{Machine: "other"}, 0},
		{Filter{Testbed: "vm"}, 0},
		{Filter{Condition: []string{"offloads-on", "mtu1500"}}, 6},
		{Filter{Condition: []string{"offloads-off"}}, 0},
		{Filter{Labels: map[string]string{"ticket": "1"}}, 0},
		{Filter{Since: t0.AddDate(0, 0, 8)}, 6},
	} {
		if got := Build(runs, Options{Filter: tc.f}); len(got) != tc.want {
			t.Errorf("filter %+v: %d series, want %d", tc.f, len(got), tc.want)
		}
	}
	s := Build(runs, Options{Filter: Filter{Since: t0.AddDate(0, 0, 8), Method: "native", Metric: MetricThroughput}})
	if len(s[0].Points) != 2 {
		t.Errorf("since day 8: %d points, want 2", len(s[0].Points))
	}
}

func TestParse(t *testing.T) {
	now := t0
	for in, want := range map[string]time.Time{"": {}, "7d": t0.AddDate(0, 0, -7), "36h": t0.Add(-36 * time.Hour), "2026-01-02T03:04:05Z": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} {
		got, err := ParseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "0h"} {
		if _, err := ParseSince(bad, now); err == nil {
			t.Errorf("ParseSince(%q) accepted", bad)
		}
	}
	if _, err := ParseLabels([]string{"novalue"}); err == nil {
		t.Error("ParseLabels accepted a label without =")
	}
}
