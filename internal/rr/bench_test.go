package rr

import (
	"context"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// BenchmarkTransaction measures one 1-byte transaction over loopback in a
// namespace, both ends in this process: ns/op is the round-trip time as the
// client's loop sees it, the kernel's TCP path included, timed like Run
// times it. Compare min and p50 with "sockperf ping-pong --tcp --full-rtt"
// on the same path to see what Go adds.
func BenchmarkTransaction(b *testing.B) {
	for _, addr := range []netip.Addr{testV4, testV6} {
		b.Run(addr.String(), func(b *testing.B) {
			ns := newTestNS(b)
			var s *Server
			var err error
			ns.do(b, func() { s, err = Listen(netip.AddrPortFrom(addr, 0)) })
			if err != nil {
				b.Fatal(err)
			}
			ns.start(func() { _ = s.Serve(false) })
			b.Cleanup(func() { s.Close() })
			cfg, err := Config{Server: s.Addr(), Duration: time.Second}.withDefaults()
			if err != nil {
				b.Fatal(err)
			}
			var allocs uint64
			var rtts []int64
			ns.do(b, func() {
				c, err := dial(context.Background(), cfg)
				if err != nil {
					b.Error(err)
					return
				}
				defer c.close()
				req, resp := []byte{'q'}, []byte{0}
				rtts = make([]int64, b.N)
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				before := ms.Mallocs
				base := time.Now()
				b.ResetTimer()
				for i := range b.N {
					t0 := time.Since(base)
					if err := transact(c.fd, req, resp); err != nil {
						b.Error(err)
						return
					}
					rtts[i] = int64(time.Since(base) - t0)
				}
				b.StopTimer()
				runtime.ReadMemStats(&ms)
				allocs = ms.Mallocs - before
			})
			// ns/op is the mean, which a busy machine's tail dominates:
			// the median and minimum show the cost of the path itself.
			var r Report
			summarize(&r, rtts)
			b.ReportMetric(float64(allocs)/float64(b.N), "mallocs/op")
			b.ReportMetric(r.Min, "min-µs")
			b.ReportMetric(r.P50, "p50-µs")
			b.ReportMetric(r.P99, "p99-µs")
		})
	}
}

// BenchmarkClock is the cost of one timestamp of the measuring loop.
func BenchmarkClock(b *testing.B) {
	base := time.Now()
	var sink time.Duration
	for range b.N {
		sink += time.Since(base)
	}
	if sink < 0 {
		b.Fatal("clock went backwards")
	}
}

// BenchmarkRun1s reports the wall time of a whole Run with Duration 1 s
// and the default 200 ms warm-up, from the call to the report, in-process
// (no exec): wall-s/op should stay near 1.2. The load package's
// BenchmarkRRClientWallTime measures the same with a process start.
func BenchmarkRun1s(b *testing.B) {
	ns := newTestNS(b)
	var s *Server
	var err error
	ns.do(b, func() { s, err = Listen(netip.AddrPortFrom(testV4, 0)) })
	if err != nil {
		b.Fatal(err)
	}
	ns.start(func() { _ = s.Serve(false) })
	b.Cleanup(func() { s.Close() })
	var wall, p50 float64
	for range b.N {
		var r Report
		ns.do(b, func() {
			start := time.Now()
			r, err = Run(context.Background(), Config{Server: s.Addr(), Duration: time.Second})
			wall += time.Since(start).Seconds()
		})
		if err != nil {
			b.Fatal(err)
		}
		p50 += r.P50
	}
	b.ReportMetric(wall/float64(b.N), "wall-s/op")
	b.ReportMetric(p50/float64(b.N), "p50-µs")
}
