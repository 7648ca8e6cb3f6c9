package cli

import (
	"context"
	"testing"

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
	for b.Loop() {
		series, err := LoadTrend(ctx, st, trend.Options{Filter: f})
		if err != nil {
			b.Fatal(err)
		}
		if len(series) != wantSeries {
			b.Fatalf("%d series, want %d", len(series), wantSeries)
		}
	}
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
