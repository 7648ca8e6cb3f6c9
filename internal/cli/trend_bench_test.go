package cli

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/report/trend"
	"github.com/tunbench/tunbench/internal/store"
	"github.com/tunbench/tunbench/internal/store/benchdb"
)

// benchTrend times LoadTrend, what "tunbench trend" does before printing,
// on benchdb's store of 10,000 runs and 1,200,000 measured values
// (docs/performance.md).
func benchTrend(b *testing.B, f trend.Filter, wantSeries int) {
	st, err := store.Open(benchdb.Path(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	cpu0 := cpuTime(b)
	for b.Loop() {
		series, err := LoadTrend(ctx, st, trend.Options{Filter: f})
		if err != nil {
			b.Fatal(err)
		}
		if len(series) != wantSeries {
			b.Fatalf("%d series, want %d", len(series), wantSeries)
		}
	}
	b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkTrendStoreOneSeries: "tunbench trend --method vxlan
// --condition mtu9000 --machine bench1 --metric throughput".
func BenchmarkTrendStoreOneSeries(b *testing.B) {
	benchTrend(b, trend.Filter{Method: "vxlan", Condition: []string{"mtu9000"}, Machine: "bench1", Metric: trend.MetricThroughput}, 1)
}

// BenchmarkTrendStoreAll: "tunbench trend", every series (10 keys, 3
// figures, 4 machines).
func BenchmarkTrendStoreAll(b *testing.B) {
	benchTrend(b, trend.Filter{}, len(benchdb.Methods)*len(benchdb.MTUs)*len(trend.Metrics)*len(benchdb.Machines))
}

// cpuTime is the user and system CPU time this process has used: on the
// shared development machine wall time moves with other jobs, CPU time
// much less.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
