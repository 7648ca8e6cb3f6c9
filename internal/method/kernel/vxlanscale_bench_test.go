package kernel_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// BenchmarkTunnels sets N tunnels up and tears them down again on a
// local testbed over IPv4, for vxlan's FDB remotes (1 to 10,000; issue
// 41's target: 10,000 in under 5 s), vxlan's devices and srv6's segments
// (1, 100, 1,000), and reports the medians of set-up and teardown in
// milliseconds, and the per-tunnel add's p50 and p99 in microseconds
// (Path.Adds, both sides; docs/performance.md). Each iteration sets up on
// the same testbed, which its teardown leaves as it found it.
//
//	go test -run '^$' -bench BenchmarkTunnels -benchtime 3x ./internal/method/kernel/
func BenchmarkTunnels(b *testing.B) {
	for _, c := range []struct {
		name   string
		m      method.Method
		opts   map[string]string
		counts []int
	}{
		{"vxlan-fdb", kernel.VXLAN{}, map[string]string{"scale": "fdb"}, []int{1, 100, 1000, 10000}},
		{"vxlan-devices", kernel.VXLAN{}, nil, []int{1, 100, 1000}},
		{"srv6", kernel.SRv6{}, nil, []int{1, 100, 1000}},
	} {
		for _, n := range c.counts {
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				testbedtest.RequireNetAdmin(b)
				l := testbedtest.New(b, 1500)
				env := &method.Env{
					A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500,
					OverlayMTU: 1500 - c.m.Overhead(method.IPv4),
					Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir, Options: c.opts, Tunnels: n,
				}
				ctx := context.Background()
				var setups, teardowns, adds []time.Duration
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					path, err := c.m.Setup(ctx, env)
					if err != nil {
						b.Fatal(err)
					}
					setups = append(setups, time.Since(start))
					adds = append(adds, path.Adds...)
					start = time.Now()
					if err := c.m.Teardown(ctx, env); err != nil {
						b.Fatal(err)
					}
					teardowns = append(teardowns, time.Since(start))
				}
				b.ReportMetric(ms(median(setups)), "setup-ms")
				b.ReportMetric(ms(median(teardowns)), "teardown-ms")
				if len(adds) > 0 {
					slices.Sort(adds)
					b.ReportMetric(float64(adds[len(adds)/2].Nanoseconds())/1e3, "add-p50-µs")
					b.ReportMetric(float64(adds[len(adds)*99/100].Nanoseconds())/1e3, "add-p99-µs")
				}
			})
		}
	}
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
