package method_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/kernel"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/localns"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// BenchmarkSetupTeardown sets a method up and tears it down again on a
// local testbed, and reports the median in milliseconds (target: 50 ms or
// less for native and vxlan; see docs/performance.md).
func BenchmarkSetupTeardown(b *testing.B) {
	for _, m := range []method.Method{method.Native{}, kernel.VXLAN{}, kernel.SRv6{}} {
		b.Run(m.Name(), func(b *testing.B) {
			l := testbedtest.New(b, 1500)
			env := &method.Env{
				A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500,
				OverlayMTU: 1500 - m.Overhead(method.IPv4),
				Prefix:     testbed.DevicePrefix(l.ID), Dir: l.Dir,
			}
			ctx := context.Background()
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := m.Setup(ctx, env); err != nil {
					b.Fatal(err)
				}
				if err := m.Teardown(ctx, env); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "median-ms")
		})
	}
}

// BenchmarkTestbed builds and removes a whole local testbed (two
// namespaces and a veth pair), which every step of a run does.
func BenchmarkTestbed(b *testing.B) {
	testbedtest.RequireNetAdmin(b)
	root := b.TempDir()
	times := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		start := time.Now()
		l, err := localns.NewLocal(localns.Config{ID: testbed.NewID(), Root: root})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2])/1e6, "median-ms")
}
