package report

import (
	"fmt"
	"time"

	"github.com/tunbench/tunbench/internal/result"
)

// Fixtures: realistic runs built in Go, so the golden files show what users
// will see. Numbers are shaped like an 8-core machine with veth pairs.

var fixtureStart = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

func fixtureHost(emulated bool) result.Host {
	h := result.Host{
		Hostname: "bench1", Kernel: "6.8.0-45-generic", Arch: "amd64",
		CPUModel: "AMD EPYC 7313P 16-Core Processor", CPUCount: 8, MemoryMiB: 32768,
		Tunbench: "v0.1.0", GoVersion: "go1.26.8",
		Tools: map[string]string{"iperf3": "3.16", "sockperf": "3.10"},
	}
	if emulated {
		h.Hostname, h.Kernel, h.CPUModel, h.CPUCount, h.MemoryMiB = "tunbench-guest", "6.1.0-28-amd64", "QEMU Virtual CPU version 2.5+", 2, 2048
		h.Emulated = true
	}
	return h
}

// rep describes one repetition's measured values; zero gbps means failed.
type rep struct {
	gbps, p50, p99, snd, rcv, busyPct, background float64
	busy                                          bool
	err                                           string
}

// cellOf builds a realistic cell for one repetition.
func cellOf(runID, method, impl string, p result.Params, n int, r rep, at time.Time) result.Cell {
	key := fmt.Sprintf("%s/%s/%s/mtu%d/offloads-%t/streams%d", method, impl, p.Family, p.UnderlayMTU, p.Offloads, p.Streams)
	c := result.Cell{
		Schema: result.SchemaVersion, RunID: runID, Key: key, Method: method, Implementation: impl,
		Params: p, Repetition: n, Status: result.StatusOK,
		Started: at, Finished: at.Add(19 * time.Second),
		Meta: result.Meta{
			BackgroundBusy: r.background, Busy: r.busy, Kernel: "6.8.0-45-generic",
			Devices: []result.Device{{Side: "a", Name: "veth-a", Kind: "veth", MTU: p.UnderlayMTU,
				Offloads: map[string]bool{"tcp-segmentation-offload": p.Offloads, "generic-receive-offload": p.Offloads}}},
		},
	}
	if r.err != "" {
		c.Status, c.Error = result.StatusFailed, r.err
		c.Finished = at.Add(2 * time.Second)
		return c
	}
	bps := r.gbps * 1e9
	c.Throughput = &result.Throughput{
		Tool: "iperf3", Version: "3.16", BitsPerSecond: bps, SenderBitsPerSecond: bps * 1.001,
		Bytes: int64(bps / 8 * 10), Retransmits: int64(r.gbps * 3), Seconds: 10,
		Intervals: []result.Interval{
			{Start: 0, End: 1, Bytes: int64(bps / 8 * 0.9), BitsPerSecond: bps * 0.9, Omitted: true},
			{Start: 1, End: 2, Bytes: int64(bps / 8), BitsPerSecond: bps},
		},
		SenderToolCPUPercent: 100 * r.snd, ReceiverToolCPUPercent: 100 * r.rcv,
	}
	c.Latency = &result.Latency{
		Tool: "sockperf", Version: "3.10", Samples: 250000, Min: r.p50 * 0.7, Mean: r.p50 * 1.05,
		P50: r.p50, P90: (r.p50 + r.p99) / 2, P99: r.p99, Max: r.p99 * 4, StdDev: r.p50 * 0.2,
		CDF: []result.Quantile{{Fraction: 0, RTT: r.p50 * 0.7}, {Fraction: 0.5, RTT: r.p50}, {Fraction: 0.99, RTT: r.p99}},
	}
	c.CPU = &result.CPU{
		Interval: 1, Cores: 8, BusyMin: r.busyPct * 0.9, BusyAvg: r.busyPct, BusyMax: r.busyPct * 1.1,
		Split: "approximate", SenderCores: r.snd, ReceiverCores: r.rcv, SoftirqCores: r.busyPct / 100 * 8 * 0.4,
	}
	return c
}

func params(family string, mtu, overlay int, offloads bool, streams int) result.Params {
	return result.Params{Family: family, UnderlayMTU: mtu, OverlayMTU: overlay, Offloads: offloads,
		Streams: streams, Duration: 10, Omit: 2, Latency: 5}
}

// localRun: native, vxlan and srv6, three repetitions each, on the local
// testbed. vxlan is unstable and one of its repetitions had a busy
// background; srv6's second repetition failed.
func localRun() (result.Run, []result.Cell) {
	run := result.Run{
		Schema: result.SchemaVersion, ID: "20250314T092653-3f9c", Started: fixtureStart,
		Finished: fixtureStart.Add(3*time.Minute + 41*time.Second), Status: result.RunDone,
		Testbed: "local", Scenario: "methods: [native, vxlan, srv6]\nrepetitions: 3\n", Host: fixtureHost(false),
	}
	methods := []struct {
		name, impl string
		overlay    int
		reps       []rep
	}{
		{"native", "kernel", 1500, []rep{
			{gbps: 23.41, p50: 18.2, p99: 27.5, snd: 0.93, rcv: 0.98, busyPct: 34.1, background: 0.8},
			{gbps: 23.92, p50: 18.0, p99: 26.9, snd: 0.94, rcv: 0.99, busyPct: 34.6, background: 1.1},
			{gbps: 23.63, p50: 18.4, p99: 28.1, snd: 0.93, rcv: 0.97, busyPct: 34.3, background: 0.9},
		}},
		{"vxlan", "kernel", 1430, []rep{
			{gbps: 9.84, p50: 24.1, p99: 38.0, snd: 0.71, rcv: 0.99, busyPct: 31.2, background: 1.0},
			{gbps: 12.91, p50: 23.7, p99: 36.2, snd: 0.81, rcv: 1.00, busyPct: 33.0, background: 1.3},
			{gbps: 10.12, p50: 24.9, p99: 41.7, snd: 0.73, rcv: 0.99, busyPct: 38.8, background: 31.5, busy: true},
		}},
		{"srv6", "kernel", 1436, []rep{
			{gbps: 7.21, p50: 26.0, p99: 41.3, snd: 0.62, rcv: 1.00, busyPct: 29.7, background: 0.7},
			{err: "setup srv6: ip -6 route add fc00:b::/64 encap seg6 mode encap segs fc00:b::100 dev veth-a: " +
				"exit status 2: Error: Operation not supported"},
			{gbps: 7.38, p50: 25.6, p99: 40.8, snd: 0.63, rcv: 1.00, busyPct: 29.9, background: 0.6},
		}},
	}
	var cells []result.Cell
	at := fixtureStart.Add(5 * time.Second)
	for _, m := range methods {
		for i, r := range m.reps {
			cells = append(cells, cellOf(run.ID, m.name, m.impl, params("ipv6", 1500, m.overlay, true, 1), i+1, r, at))
			at = at.Add(20 * time.Second)
		}
	}
	for i := range cells {
		cells[i].ID = int64(i + 1)
	}
	return run, cells
}

// matrixRun: native and vxlan over underlay MTU {1500, 9000} and offloads
// {on, off}, two repetitions each, so MTU and offloads get columns.
func matrixRun() (result.Run, []result.Cell) {
	run := result.Run{
		Schema: result.SchemaVersion, ID: "20250315T141502-77aa", Started: fixtureStart.Add(29 * time.Hour),
		Finished: fixtureStart.Add(29*time.Hour + 6*time.Minute), Status: result.RunDone,
		Testbed: "local", Scenario: "methods: [native, vxlan]\nmtu: [1500, 9000]\noffloads: [true, false]\n",
		Host: fixtureHost(false),
	}
	var cells []result.Cell
	at := run.Started.Add(3 * time.Second)
	for _, mtu := range []int{1500, 9000} {
		for _, off := range []bool{true, false} {
			for _, m := range []string{"native", "vxlan"} {
				base := 23.5
				if !off {
					base = 4.1
				}
				if mtu == 9000 {
					base *= 1.6
				}
				overlay, factor := mtu, 1.0
				if m == "vxlan" {
					overlay, factor = mtu-50, 0.45
				}
				for n := 1; n <= 2; n++ {
					g := base * factor * step(1, 0.01, n)
					r := rep{gbps: g, p50: step(20, 0.3, n), p99: step(31, 1, n), snd: step(0.8, 0.02, n),
						rcv: 0.97, busyPct: 30 + float64(n), background: 1}
					cells = append(cells, cellOf(run.ID, m, "kernel", params("ipv4", mtu, overlay, off, 1), n, r, at))
					at = at.Add(20 * time.Second)
				}
			}
		}
	}
	for i := range cells {
		cells[i].ID = int64(100 + i)
	}
	return run, cells
}

// emulatedRun: WireGuard (kernel and wireguard-go) and vxlan in a TCG
// guest, no native baseline.
func emulatedRun() (result.Run, []result.Cell) {
	run := result.Run{
		Schema: result.SchemaVersion, ID: "20250316T080000-e001", Started: fixtureStart.Add(47 * time.Hour),
		Status: result.RunRunning, Testbed: "vm",
		Scenario: "methods: [wireguard, vxlan]\nrepetitions: 3\n", Host: fixtureHost(true),
	}
	var cells []result.Cell
	at := run.Started.Add(10 * time.Second)
	for _, m := range []struct{ name, impl string }{{"wireguard", "kernel"}, {"wireguard", "wireguard-go"}, {"vxlan", "kernel"}} {
		for n := 1; n <= 3; n++ {
			g := step(0.412, 0.004, n)
			switch {
			case m.impl == "wireguard-go":
				g = step(0.233, 0.003, n)
			case m.name == "vxlan":
				g = step(0.608, 0.005, n)
			}
			r := rep{gbps: g, p50: step(410, 5, n), p99: step(1900, 40, n), snd: 0.61, rcv: 0.72, busyPct: 97}
			c := cellOf(run.ID, m.name, m.impl, params("ipv4", 1500, 1420, true, 1), n, r, at)
			c.Meta.Emulated = true
			cells = append(cells, c)
			at = at.Add(25 * time.Second)
		}
	}
	for i := range cells {
		cells[i].ID = int64(200 + i)
	}
	return run, cells
}

// step returns a + d*n. The explicit conversion rounds the product, so
// no platform fuses it into a multiply-add and the golden files are the
// same everywhere.
func step(a, d float64, n int) float64 { return a + float64(d*float64(n)) }

// okCell is a minimal successful repetition: throughput in Gbit/s and CPU.
func okCell(method string, mtu int, rep int, gbps float64) result.Cell {
	return result.Cell{
		Key: method + "/" + string(rune('0'+mtu/1000)), Method: method, Implementation: "kernel",
		Params:     result.Params{Family: "ipv4", UnderlayMTU: mtu, OverlayMTU: mtu - 50, Offloads: true, Streams: 1},
		Repetition: rep, Status: result.StatusOK,
		Throughput: &result.Throughput{BitsPerSecond: gbps * 1e9},
		CPU:        &result.CPU{Cores: 16, BusyAvg: 25, Split: "approximate", SenderCores: 1, ReceiverCores: 1.5},
	}
}
