package wireguard_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/method/wireguard"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/testbed"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// BenchmarkWireGuardScale sets wireguard-go and boringtun up with 1,
// 100, 1,000 and 10,000 peers (IPv4, one testbed per method, the counts
// ascending then descending so that drift hits each alike) and reports,
// per method and count, the median set-up time (daemons started, every
// peer configured, first handshake: target for wireguard-go at 10,000
// peers, under 10 s), the per-peer add p50 and p99 (Path.Adds), side a's
// daemon RSS, and the Gbit/s of one TCP stream through the measured peer
// (3 s). Run it with -benchtime 1x (see docs/performance.md).
func BenchmarkWireGuardScale(b *testing.B) {
	counts := []int{1, 100, 1_000, 10_000}
	if s := os.Getenv("TUNBENCH_WG_SCALE_COUNTS"); s != "" {
		counts = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatalf("TUNBENCH_WG_SCALE_COUNTS: %v", err)
			}
			counts = append(counts, n)
		}
	}
	const rounds, seconds = 2, 3
	for _, tt := range []struct {
		m       method.Method
		program string
	}{{wireguard.NewWireGuardGo(), "wireguard-go"}, {wireguard.NewBoringTun(), "boringtun-cli"}} {
		b.Run(tt.m.Name(), func(b *testing.B) {
			requireProgram(b, tt.m, tt.program)
			for range b.N {
				benchScale(b, tt.m, counts, rounds, seconds)
			}
		})
	}
}

// benchScale is one method's part of BenchmarkWireGuardScale.
func benchScale(b *testing.B, m method.Method, counts []int, rounds, seconds int) {
	l := testbedtest.New(b, 1500)
	ctx := context.Background()
	setup, p50, p99, rss, gbps := map[int][]float64{}, map[int][]float64{}, map[int][]float64{}, map[int][]float64{}, map[int][]float64{}
	for round := range rounds {
		order := slices.Clone(counts)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, n := range order {
			env := &method.Env{A: l.A, B: l.B, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1500 - m.Overhead(method.IPv4),
				Prefix: testbed.DevicePrefix(l.ID), Dir: l.Dir, Tunnels: n}
			start := time.Now()
			path, err := m.Setup(ctx, env)
			took := time.Since(start)
			if err != nil {
				_ = m.Teardown(ctx, env)
				b.Fatalf("%s: %d peers: %v", m.Name(), n, err)
			}
			kb := vmRSSkB(b, path.Daemons[0].PID)
			g := methodtest.Gbps(b, methodtest.Iperf3(b, l, path, seconds))
			if err := m.Teardown(ctx, env); err != nil {
				b.Fatal(err)
			}
			adds := make([]float64, 0, len(path.Adds))
			for _, d := range path.Adds {
				adds = append(adds, float64(d.Nanoseconds())/1000)
			}
			slices.Sort(adds)
			setup[n] = append(setup[n], took.Seconds())
			rss[n] = append(rss[n], float64(kb)/1024)
			gbps[n] = append(gbps[n], g)
			if len(adds) > 0 {
				p50[n] = append(p50[n], stats.Quantile(adds, 0.5))
				p99[n] = append(p99[n], stats.Quantile(adds, 0.99))
			}
			b.Logf("round %d, %d peers: set-up %.3f s, daemon a %d kB, %.2f Gbit/s", round+1, n, took.Seconds(), kb, g)
		}
	}
	for _, n := range counts {
		b.ReportMetric(stats.Median(setup[n]), fmt.Sprintf("setup-s-%d", n))
		b.ReportMetric(stats.Median(rss[n]), fmt.Sprintf("rss-MB-%d", n))
		b.ReportMetric(stats.Median(gbps[n]), fmt.Sprintf("Gbps-%d", n))
		if len(p50[n]) > 0 {
			b.ReportMetric(stats.Median(p50[n]), fmt.Sprintf("add-p50-us-%d", n))
			b.ReportMetric(stats.Median(p99[n]), fmt.Sprintf("add-p99-us-%d", n))
		}
	}
}

// vmRSSkB is the resident set of process pid, in kB.
func vmRSSkB(b *testing.B, pid int) int {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				b.Fatalf("VmRSS of %d: %v", pid, err)
			}
			return kb
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
