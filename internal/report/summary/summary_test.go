package summary

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/report/internal/fixture"
	"github.com/tunbench/tunbench/internal/result"
)

func failedCell(method string, mtu, rep int, msg string) result.Cell {
	c := fixture.OkCell(method, mtu, rep, 0)
	c.Status, c.Error, c.Throughput, c.CPU = result.StatusFailed, msg, nil, nil
	return c
}

func find(t *testing.T, rows []Summary, method string, mtu int) Summary {
	t.Helper()
	for _, r := range rows {
		if r.Method == method && r.Params.UnderlayMTU == mtu {
			return r
		}
	}
	t.Fatalf("no row for %s at MTU %d", method, mtu)
	return Summary{}
}

func pct(v float64) *float64 { return &v }

func TestPercentNative(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cells []result.Cell
		want  *float64 // % native of vxlan at MTU 1500
	}{
		{
			name: "ratio of means",
			cells: []result.Cell{
				fixture.OkCell("native", 1500, 1, 9), fixture.OkCell("native", 1500, 2, 11),
				fixture.OkCell("vxlan", 1500, 1, 7), fixture.OkCell("vxlan", 1500, 2, 9),
			},
			want: pct(80),
		},
		{
			name: "failed native repetitions do not count",
			cells: []result.Cell{
				fixture.OkCell("native", 1500, 1, 10), failedCell("native", 1500, 2, "iperf3: timeout"),
				fixture.OkCell("vxlan", 1500, 1, 2.5),
			},
			want: pct(25),
		},
		{
			name:  "no native in the run",
			cells: []result.Cell{fixture.OkCell("vxlan", 1500, 1, 8)},
		},
		{
			name: "every native repetition failed",
			cells: []result.Cell{
				failedCell("native", 1500, 1, "setup: no veth"), fixture.OkCell("vxlan", 1500, 1, 8),
			},
		},
		{
			name: "native only at another MTU",
			cells: []result.Cell{
				fixture.OkCell("native", 9000, 1, 30), fixture.OkCell("vxlan", 1500, 1, 8),
			},
		},
		{
			name: "baseline per MTU, overlay MTU ignored",
			cells: []result.Cell{
				fixture.OkCell("native", 9000, 1, 30), fixture.OkCell("vxlan", 9000, 1, 12),
				fixture.OkCell("native", 1500, 1, 20), fixture.OkCell("vxlan", 1500, 1, 5),
			},
			want: pct(25),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := Aggregate(result.Run{}, tc.cells)
			got := find(t, rows, "vxlan", 1500).PercentNative
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%% native of vxlan (-want +got):\n%s", diff)
			}
			for _, r := range rows {
				if r.Method == "native" && r.Throughput.N > 0 && (r.PercentNative == nil || *r.PercentNative != 100) {
					t.Errorf("native at MTU %d: %% native = %v, want 100", r.Params.UnderlayMTU, r.PercentNative)
				}
			}
		})
	}
}

func TestFigures(t *testing.T) {
	for _, tc := range []struct {
		name          string
		gbps          []float64
		mean, hw      float64 // hw < 0: no interval
		unstable      bool
		perCore       float64
		wantPercentCV float64
	}{
		// t(0.975, 2) = 4.3027; sd = 1; hw = 4.3027/sqrt(3) = 2.4841.
		{name: "three repetitions", gbps: []float64{9, 10, 11}, mean: 10, hw: 2.4841, perCore: 2.5, wantPercentCV: 10},
		// t(0.975, 1) = 12.706; sd = 0.7071; hw = 12.706*0.7071/sqrt(2) = 6.353.
		{name: "two repetitions", gbps: []float64{8, 9}, mean: 8.5, hw: 6.3531, perCore: 2.125, wantPercentCV: 8.3189},
		{name: "unstable", gbps: []float64{10, 10, 13}, mean: 11, hw: 4.3027, unstable: true, perCore: 2.75, wantPercentCV: 15.746},
		{name: "one repetition has no interval", gbps: []float64{8}, mean: 8, hw: -1, perCore: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cells []result.Cell
			for i, g := range tc.gbps {
				cells = append(cells, fixture.OkCell("vxlan", 1500, i+1, g))
			}
			rows := Aggregate(result.Run{}, cells)
			if len(rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(rows))
			}
			f := rows[0].Throughput
			near := func(what string, got, want, tol float64) {
				if math.Abs(got-want) > tol {
					t.Errorf("%s = %.5f, want %.5f", what, got, want)
				}
			}
			near("mean Gbit/s", f.Mean, tc.mean, 1e-9)
			if tc.hw < 0 {
				if f.HasCI {
					t.Errorf("one repetition: HasCI = true, want no interval")
				}
			} else {
				near("CI95 half-width", f.HalfWidth, tc.hw, 5e-4)
				near("CI95 low", f.CI95Low, tc.mean-tc.hw, 5e-4)
				near("CV %", 100*f.CV, tc.wantPercentCV, 5e-3)
			}
			if f.Unstable() != tc.unstable || rows[0].Unstable != tc.unstable {
				t.Errorf("unstable = %v (row %v), want %v", f.Unstable(), rows[0].Unstable, tc.unstable)
			}
			// 25% of 16 cores busy = 4 busy cores.
			near("busy cores", rows[0].BusyCores.Mean, 4, 1e-12)
			near("Gbit/s per busy core", rows[0].GbpsPerCore.Mean, tc.perCore, 1e-12)
			near("sender cores", rows[0].SenderCPU.Mean, 1, 1e-12)
			near("receiver cores", rows[0].ReceiverCPU.Mean, 1.5, 1e-12)
		})
	}
}

func TestRepetitionAccounting(t *testing.T) {
	skipped := fixture.OkCell("vxlan", 1500, 3, 0)
	skipped.Status, skipped.Error, skipped.Throughput, skipped.CPU = result.StatusSkipped, "needs kernel module vxlan", nil, nil
	busy := fixture.OkCell("vxlan", 1500, 4, 30) // an outlier on a busy machine
	busy.Meta.Busy, busy.Meta.BackgroundBusy = true, 42
	cells := []result.Cell{
		fixture.OkCell("vxlan", 1500, 1, 8),
		failedCell("vxlan", 1500, 2, "iperf3 client: exit status 1: unable to connect"),
		skipped,
		busy,
	}
	rows := Aggregate(result.Run{}, cells)
	r := rows[0]
	if r.Repetitions != 4 || r.OK != 2 || r.Failed != 1 || r.Skipped != 1 {
		t.Errorf("repetitions %d ok %d failed %d skipped %d; want 4, 2, 1, 1", r.Repetitions, r.OK, r.Failed, r.Skipped)
	}
	want := []Problem{
		{Repetition: 2, Status: "failed", Error: "iperf3 client: exit status 1: unable to connect"},
		{Repetition: 3, Status: "skipped", Error: "needs kernel module vxlan"},
	}
	if diff := cmp.Diff(want, r.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if r.Throughput.N != 2 || r.Throughput.Mean != 19 {
		t.Errorf("throughput over n=%d mean %v; want the 2 ok repetitions, mean 19", r.Throughput.N, r.Throughput.Mean)
	}
	if !r.BackgroundBusy || r.BackgroundBusyMax != 42 {
		t.Errorf("background busy %v max %v; want true, 42", r.BackgroundBusy, r.BackgroundBusyMax)
	}

	var b strings.Builder
	if err := Table(&b, result.Run{ID: "r1"}, cells, TableOptions{OmitHeader: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"vxlan rep 2 failed: iperf3 client: exit status 1: unable to connect",
		"vxlan rep 3 skipped: needs kernel module vxlan",
		"2/4",
		"* busy background: the machine was already up to 42.0% busy",
		"! unstable",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}

func TestLabelsAndOrder(t *testing.T) {
	wgKernel := fixture.OkCell("wireguard", 1500, 1, 5)
	wgGo := fixture.OkCell("wireguard", 1500, 1, 3)
	wgGo.Implementation, wgGo.Key = "wireguard-go", "wg-go"
	cells := []result.Cell{
		fixture.OkCell("vxlan", 1500, 1, 8), wgKernel, wgGo,
		fixture.OkCell("vxlan", 9000, 1, 20), fixture.OkCell("native", 9000, 1, 40),
		fixture.OkCell("native", 1500, 1, 10), // native comes first in its group anyway
	}
	var got []string
	for _, r := range Aggregate(result.Run{}, cells) {
		got = append(got, r.Label+"@"+string(rune('0'+r.Params.UnderlayMTU/1000)))
	}
	want := []string{"native@1", "vxlan@1", "wireguard/kernel@1", "wireguard/wireguard-go@1", "native@9", "vxlan@9"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("row order and labels (-want +got):\n%s", diff)
	}
}

func TestMethodsFilter(t *testing.T) {
	run, cells := fixture.LocalRun()
	var b strings.Builder
	if err := Table(&b, run, cells, TableOptions{OmitHeader: true, Methods: []string{"vxlan"}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\nnative ") || strings.Contains(out, "\nsrv6 ") || strings.Contains(out, "run 2025") {
		t.Errorf("filtered table shows other methods or the header:\n%s", out)
	}
	if !strings.Contains(out, "46.3") {
		t.Errorf("filtered table lost %% native against the run's native:\n%s", out)
	}
}

func TestEmptyRun(t *testing.T) {
	var b strings.Builder
	if err := Table(&b, result.Run{ID: "empty", Status: result.RunFailed, Error: "setup: not root"}, nil, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"run empty, failed", "run error: setup: not root", "no cells recorded"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table of an empty run lacks %q:\n%s", s, b.String())
		}
	}
}
