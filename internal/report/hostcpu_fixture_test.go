package report

import (
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// hostsCPU is one ssh cell's CPU record: each host's busy % and per-core
// figures. oneCore puts the sender host's transfer on cpu2 alone.
func hostsCPU(sndBusy, rcvBusy, sndCores, rcvCores float64, oneCore bool) *result.CPU {
	spread := func(busy float64) []result.CoreUsage {
		var out []result.CoreUsage
		for i := range 4 {
			out = append(out, result.CoreUsage{CPU: i, System: busy * 0.6, Softirq: busy * 0.4, Idle: 100 - busy})
		}
		return out
	}
	per := spread(sndBusy)
	if oneCore {
		// One core full, the other three nearly idle: still sndBusy on average.
		rest := (4*sndBusy - 99) / 3
		for i := range per {
			per[i] = result.CoreUsage{CPU: i, System: rest * 0.5, Softirq: rest * 0.5, Idle: 100 - rest}
		}
		per[2] = result.CoreUsage{CPU: 2, System: 30, Softirq: 69, Idle: 1}
	}
	f := func(v float64) *float64 { return &v }
	return &result.CPU{
		Interval: 1, Cores: 4, BusyMin: sndBusy - 3, BusyAvg: sndBusy, BusyMax: sndBusy + 4, PerCore: per,
		Samples: []result.CPUSample{{T: 1, Busy: sndBusy - 3}, {T: 2, Busy: sndBusy + 4}},
		Split:   "hosts", SenderCores: sndCores, ReceiverCores: rcvCores,
		Hosts: []result.HostCPU{
			{Host: "host-a", Side: "sender", Cores: 4, BusyMin: f(sndBusy - 3), BusyAvg: sndBusy, BusyMax: sndBusy + 4, PerCore: per},
			{Host: "host-b", Side: "receiver", Cores: 4, BusyMin: f(rcvBusy - 2), BusyAvg: rcvBusy, BusyMax: rcvBusy + 2, PerCore: spread(rcvBusy)},
		},
	}
}

// hostCPURun: native and ipsec between two ssh hosts (site a, host-a, sends to site b, host-b),
// three repetitions of tcp_stream and udp_sizes at 64 and 1024 bytes.
// ipsec's sender host carried the TCP transfer and the 64-byte UDP
// trial on one core (cpu2 at 99%) while its other cores had room.
func hostCPURun() (result.Run, []result.Cell) {
	run := result.Run{
		Schema: result.SchemaVersion, ID: "20250318T120000-c0c0", Started: fixtureStart.Add(96 * time.Hour),
		Finished: fixtureStart.Add(96*time.Hour + 3*time.Minute), Status: result.RunDone,
		Testbed: "ssh", Scenario: "methods: [native, ipsec]\ntests: [tcp_stream, udp_sizes]\n", Host: fixtureHost(false),
	}
	var cells []result.Cell
	at := run.Started.Add(time.Second)
	for _, m := range []struct {
		name    string
		overlay int
		gbps    float64
		busy    float64
		one     bool
	}{{"native", 1500, 9.4, 31, false}, {"ipsec", 1438, 2.1, 27, true}} {
		for n := 1; n <= 3; n++ {
			p := params("ipv4", 1500, m.overlay, true, 1)
			p.Latency, p.Tests, p.SiteA, p.SiteB = 0, []string{"tcp_stream", "udp_sizes"}, "a", "b"
			p.UDP = &result.UDPParams{FrameSizes: []int{64, 1024}, Rate: "unlimited", Trial: 1}
			r := rep{gbps: step(m.gbps, 0.05, n), snd: 0.9, rcv: 0.7, busyPct: m.busy, background: 1}
			c := cellOf(run.ID, m.name, "kernel", p, n, r, at)
			c.Key += "/a-b"
			c.Latency = nil
			c.CPU = hostsCPU(m.busy+float64(n)/2, 22, 1.1, 0.8, m.one)
			for _, frame := range []int{64, 1024} {
				pps := 300e3 * (1 + 0.01*float64(n))
				if m.name == "ipsec" {
					pps *= 0.4
				}
				t := result.UDPTrial{Seconds: 1, PacketsPerSecond: pps, BitsPerSecond: pps * float64(8*(frame-42)),
					Sent: uint64(pps), Received: uint64(pps), Jitter: 2, DelayP50: 30, DelayP99: 80,
					SenderCores: 1.0, ReceiverCores: 0.6 + 0.01*float64(n),
					CPU: hostsCPU(26+float64(n), 20, 1.0, 0.6, m.one && frame == 64)}
				c.UDPSizes = append(c.UDPSizes, result.UDPSize{FrameBytes: frame, PayloadBytes: frame - 42, Result: &t})
			}
			cells = append(cells, c)
			at = at.Add(20 * time.Second)
		}
	}
	for i := range cells {
		cells[i].ID = int64(300 + i)
	}
	return run, cells
}
