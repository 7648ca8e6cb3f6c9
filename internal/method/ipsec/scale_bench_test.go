package ipsec_test

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ipsec"
)

// BenchmarkIPsecTunnels sets ipsec up with 1, 100 and 1,000 CHILD_SAs
// and with the most it takes (ipsec.MaxChildren), under one IKE_SA
// (kernel-libipsec on a kernel without ESP, xfrm in the lab), and
// reports the set-up time of all of them, each CHILD_SA's add (from
// swanctl --initiate to both sides installed: Path.Adds) at p50 and p99,
// how long Grow took to add one more (the reconf test's add: the
// connection loaded again on both sides, the new CHILD_SA initiated and
// seen installed), and the teardown time. Run it with -benchtime 1x
// (docs/performance.md).
func BenchmarkIPsecTunnels(b *testing.B) {
	ipsecRequireSwan(b)
	faults := ipsecWithoutESP(b)
	for _, n := range []int{1, 100, 1000, ipsec.MaxChildren} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var setup, grow, down time.Duration
			var adds []time.Duration
			for range b.N {
				m := ipsec.NewIPsec()
				_, env, path, took := setupTunnels(b, m, method.IPv4, n, nil, faults)
				start := time.Now()
				if _, err := m.Grow(context.Background(), env); err != nil {
					b.Fatal(err)
				}
				grow += time.Since(start)
				start = time.Now()
				if err := m.Teardown(context.Background(), env); err != nil {
					b.Fatal(err)
				}
				setup, down = setup+took, down+time.Since(start)
				adds = append(adds, path.Adds...)
			}
			b.ReportMetric(setup.Seconds()/float64(b.N), "setup-s")
			b.ReportMetric(float64(grow.Microseconds())/1e3/float64(b.N), "grow-ms")
			b.ReportMetric(down.Seconds()/float64(b.N), "teardown-s")
			if len(adds) > 0 {
				b.ReportMetric(float64(percentile(adds, 50).Microseconds())/1e3, "add-p50-ms")
				b.ReportMetric(float64(percentile(adds, 99).Microseconds())/1e3, "add-p99-ms")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkIPsecTunnelPosition sets ipsec up with 1,000 CHILD_SAs and
// pings across the first, the measured (middle) and the last installed
// (50 echoes of 1,300 bytes, 10 ms apart, three rounds), and reports
// each one's smallest round trip: what finding its CHILD_SA costs the
// data path, by where it was installed. On kernel-libipsec the last
// installed is the cheapest and the first the dearest (docs/performance.md).
func BenchmarkIPsecTunnelPosition(b *testing.B) {
	ipsecRequireSwan(b)
	const n = 1000
	re := regexp.MustCompile(`rtt min/avg/max/mdev = ([0-9.]+)/`)
	for range b.N {
		m := ipsec.NewIPsec()
		l, env, _, _ := setupTunnels(b, m, method.IPv4, n, nil, ipsecWithoutESP(b))
		for _, pos := range []struct {
			name string
			i    int
		}{{"first", 0}, {"measured", env.Measured()}, {"last", n - 1}} {
			best := math.Inf(1)
			for range 3 {
				a, z := method.ScaleOverlay(method.IPv4, pos.i, env.Measured())
				out, err := l.A.Run(context.Background(), "ping", "-q", "-c", "50", "-i", "0.01", "-s", "1300", "-I", a.Addr().String(), z.Addr().String())
				if err != nil {
					b.Fatalf("ping across CHILD_SA %d: %v\n%s", pos.i, err, out)
				}
				m := re.FindSubmatch(out)
				if m == nil {
					b.Fatalf("no rtt in ping's output:\n%s", out)
				}
				v, err := strconv.ParseFloat(string(m[1]), 64)
				if err != nil {
					b.Fatal(err)
				}
				best = min(best, v*1e3)
			}
			b.ReportMetric(best, pos.name+"-rtt-min-us")
		}
		b.ReportMetric(0, "ns/op")
	}
}
