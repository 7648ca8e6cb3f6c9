package kernel

import (
	"syscall"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// BenchmarkPlanTunnels10000 is tunbench's own cost of planning 10,000
// tunnels of gre (keyed devices) and ipip (routes through a flow-based
// device), both sides: the pure plan, before any host is touched
// (docs/performance.md, "Tunnels dimension: ...").
func BenchmarkPlanTunnels10000(b *testing.B) {
	ea, _ := testbedtest.NewRecordingEndpoint("a", "veth0")
	eb, _ := testbedtest.NewRecordingEndpoint("b", "veth0")
	for _, tt := range []struct {
		name string
		set  tunnelSet
	}{{"gre", greSet()}, {"ipip", ipipSet()}} {
		b.Run(tt.name, func(b *testing.B) {
			env := &method.Env{A: ea, B: eb, Family: method.IPv4, UnderlayMTU: 1500, OverlayMTU: 1476,
				Prefix: "tb1a2b3c", Tunnels: 10000}
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				_, tunnels := planTunnels(env, tt.set)
				if len(tunnels[0]) != 10000 {
					b.Fatal(len(tunnels[0]))
				}
			}
			// The machine is shared: CPU time says more than wall time.
			b.ReportMetric((cpuTime(b)-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
