package trend

import (
	"fmt"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// benchRuns are n nightly runs of two methods at two MTUs with two
// repetitions each: 8 cells a run, about 25 measured values a cell (the
// tidy export's rows), so 10,000 runs hold some 2,000,000 values.
func benchRuns(n int) []RunRecords {
	runs := make([]RunRecords, n)
	for i := range n {
		id := fmt.Sprintf("b%05d", i)
		r := result.Run{ID: id, Started: t0.Add(time.Duration(i) * time.Hour), Testbed: "local", Status: result.RunDone,
			Host: result.Host{Hostname: fmt.Sprintf("bench%d", i%4), Kernel: "6.1.0", Tools: map[string]string{"iperf3": "3.12"}}}
		if i > n/2 {
			r.Host.Kernel = "6.12.0"
		}
		var cells []result.Cell
		for _, m := range []string{"native", "vxlan"} {
			for _, mtu := range []int{1500, 9000} {
				for rep := 1; rep <= 2; rep++ {
					g := 20.0 + float64((i*7+rep)%5)
					cells = append(cells, result.Cell{RunID: id, Key: fmt.Sprintf("%s/ipv4/mtu%d/offloads-on/p1", m, mtu), Method: m, Repetition: rep,
						Status: result.StatusOK, Throughput: &result.Throughput{BitsPerSecond: g * 1e9},
						Latency: &result.Latency{P50: 50, P99: 90 + float64(rep)}})
				}
			}
		}
		runs[i] = RunRecords{Run: r, Cells: cells}
	}
	return runs
}

// BenchmarkTrendAll: every series of 10,000 runs (48 series of 2,500
// points). docs/performance.md.
func BenchmarkTrendAll(b *testing.B) {
	runs := benchRuns(10000)
	for b.Loop() {
		Build(runs, Options{})
	}
}

// BenchmarkTrendOneSeries: one series of the same 10,000 runs.
func BenchmarkTrendOneSeries(b *testing.B) {
	runs := benchRuns(10000)
	f := Filter{Method: "vxlan", Machine: "bench1", Condition: []string{"mtu9000"}, Metric: MetricThroughput}
	for b.Loop() {
		Build(runs, Options{Filter: f})
	}
}
