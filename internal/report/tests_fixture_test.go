package report

import (
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// testsRun: native and vxlan with tests [parallel, latency_under_load]
// and derived figures, 256 streams over two iperf3 processes, a line rate
// given in the scenario; vxlan's load tool saturated its core.
func testsRun() (result.Run, []result.Cell) {
	run := result.Run{
		Schema: result.SchemaVersion, ID: "20250317T101500-1212", Started: fixtureStart.Add(72 * time.Hour),
		Finished: fixtureStart.Add(72*time.Hour + 2*time.Minute), Status: result.RunDone,
		Testbed: "local", Scenario: "methods: [native, vxlan]\ntests: [parallel, latency_under_load]\nstreams: [256]\nline_rate: 25G\n",
		Host: fixtureHost(false),
	}
	var cells []result.Cell
	at := run.Started.Add(2 * time.Second)
	for _, m := range []struct {
		name              string
		overlay           int
		gbps, p50, loaded float64
		ceiling           float64
		sat               []string
	}{
		{"native", 1500, 21.7, 18.5, 410, 1448.0 / 1538, nil},
		{"vxlan", 1450, 12.2, 23.0, 640, 1398.0 / 1538, []string{"iperf3-client-5301"}},
	} {
		for rep := 1; rep <= 2; rep++ {
			p := params("ipv4", 1500, m.overlay, true, 256)
			p.Tests, p.Direction, p.StreamsPerProcess, p.LineRate = []string{"parallel", "latency_under_load"}, "forward", 128, 25e9
			bps := (m.gbps + 0.1*float64(rep)) * 1e9
			c := result.Cell{
				Schema: result.SchemaVersion, RunID: run.ID, Key: m.name + "/ipv4/mtu1500/offloads-on/p256", Method: m.name,
				Implementation: "kernel", Params: p, Repetition: rep, Status: result.StatusOK, Started: at, Finished: at.Add(9 * time.Second),
				Parallel: &result.Parallel{Streams: 256, StreamsPerProcess: 128, BitsPerSecond: bps, SenderBitsPerSecond: bps,
					Processes: []result.ProcessThroughput{{Port: 5301, Streams: 128, BitsPerSecond: bps / 2}, {Port: 5302, Streams: 128, BitsPerSecond: bps / 2}},
					CPU:       &result.CPU{Cores: 8, BusyAvg: 40, SenderCores: 1.9, ReceiverCores: 1.4, Split: "approximate"}},
				LatencyUnderLoad: &result.LatencyUnderLoad{Load: "tcp_stream", LoadBitsPerSecond: bps * 0.9,
					Idle:     &result.Latency{P50: m.p50, P99: m.p50 * 1.5},
					Loaded:   &result.Latency{P50: m.loaded, P99: m.loaded * 2},
					P50Ratio: m.loaded / m.p50, P99Ratio: m.loaded * 2 / (m.p50 * 1.5)},
				Derived: &result.Derived{CeilingFraction: m.ceiling, CeilingBitsPerSecond: 25e9 * m.ceiling,
					PercentOfCeiling: 100 * bps / (25e9 * m.ceiling), LineRate: 25e9, LineRateSource: "scenario",
					PercentOfLineRate: 100 * bps / 25e9, LoadToolSaturated: m.sat,
					Cost: &result.Cost{Basis: result.CostCPUTime, SenderNsPerPacket: 1900 + 10*float64(rep), ReceiverNsPerPacket: 1400,
						SenderNsPerByte: 0.04, ReceiverNsPerByte: 0.03}},
			}
			for i, frame := range []int{64, 512, 1514} {
				pps := (400e3 - 100e3*float64(i)) * (1 + 0.01*float64(rep))
				u := result.UDPSize{FrameBytes: frame, PayloadBytes: frame - 42, Fragmented: m.name == "vxlan" && frame == 1514,
					Result: &result.UDPTrial{Seconds: 3, PacketsPerSecond: pps, BitsPerSecond: pps * float64(8*(frame-42)),
						Sent: uint64(3 * pps * 1.01), Received: uint64(3 * pps), LossPercent: 1, OutOfOrder: uint64(i),
						DelayMin: 4, DelayP50: 9 + float64(i), DelayP99: 40, DelayMax: 90, Jitter: 1.5}}
				if frame == 512 {
					u.NDRBitsPerSecond, u.PDRBitsPerSecond = 0.8e9, 0.9e9
					u.Trials = []result.UDPTrial{*u.Result}
				}
				c.UDPSizes = append(c.UDPSizes, u)
			}
			c.MTUProbe = &result.MTUProbe{ConfiguredMTU: m.overlay, PathMTU: m.overlay, Probes: 1, Tool: "ping -M do",
				TCPMSS: m.overlay - 39, TCPBitsPerSecond: 9e9, TCPSeconds: 2}
			if m.name == "vxlan" && rep == 2 {
				c.MTUProbe.PathMTU, c.MTUProbe.Mismatch, c.MTUProbe.Stalled, c.MTUProbe.TCPBitsPerSecond, c.MTUProbe.TCPMSS = 1404, true, true, 0, 1365
			}
			cells = append(cells, c)
			at = at.Add(10 * time.Second)
		}
	}
	for i := range cells {
		cells[i].ID = int64(i + 1)
	}
	return run, cells
}
