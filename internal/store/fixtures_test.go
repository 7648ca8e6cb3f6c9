package store

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/store/pgtest"
)

var t0 = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.UTC)

func newRun(id string, started time.Time) result.Run {
	return result.Run{
		Schema:   result.SchemaVersion,
		ID:       id,
		Started:  started,
		Status:   result.RunRunning,
		Testbed:  "local",
		Labels:   map[string]string{"kernel_commit": "abc123", "ticket": "NET-42"},
		Scenario: "methods: [native, vxlan]\nrepetitions: 3\n",
		Host: result.Host{
			Hostname: "bench1", Kernel: "6.8.0-45-generic", Arch: "amd64",
			CPUModel: "AMD EPYC 7443P 24-Core Processor", CPUCount: 48, MemoryMiB: 128 * 1024,
			Tunbench: "v0.1.0", GoVersion: "go1.26.8",
			Tools:     map[string]string{"iperf3": "3.16", "sockperf": "3.10"},
			OSRelease: "Ubuntu 24.04.1 LTS", Class: result.ClassEmulated, Hypervisor: "QEMU TCG",
			ClassEvidence: `CPU model "QEMU TCG CPU version 2.5+"`,
			Emulated:      true,
			Sysctls:       map[string]string{"net.core.rmem_max": "212992"},
		},
	}
}

// fullCell returns a cell with every field set to a non-zero value.
func fullCell(runID string, rep int) result.Cell {
	c := fullCellRecords(runID, rep)
	// Each UDP trial's own CPU record (the tunnel daemons included).
	c.UDPSizes[0].Result.CPU = c.Parallel.CPU
	c.UDPSizes[0].Trials[0].CPU = c.Parallel.CPU
	return c
}

func fullCellRecords(runID string, rep int) result.Cell {
	start := t0.Add(time.Duration(rep) * time.Minute)
	return result.Cell{
		Schema:         result.SchemaVersion,
		RunID:          runID,
		Key:            "vxlan/ipv6/mtu1500/offloads/streams1",
		Method:         "vxlan",
		Implementation: "kernel",
		Params: result.Params{
			Family: "ipv6", UnderlayMTU: 1500, OverlayMTU: 1430, Offloads: true, Streams: 4,
			Duration: 10, Omit: 2, Latency: 5, LatencyTool: "rr", Pin: true,
			Options: map[string]string{"port": "4789"},
			Tests:   []string{"tcp_stream", "parallel"}, Direction: "bidir", MSS: 1220, CongestionControl: "cubic",
			StreamsPerProcess: 128, LineRate: 25e9,
			OffloadSet: "udp-tnl-seg-off", OffloadFeatures: map[string]bool{"tx-udp_tnl-segmentation": false},
			WAN: &result.WANParams{DelayMs: 40, JitterMs: 2, LossPercent: 0.1, RateBps: 1e9, Qdisc: "netem"},
			UDP: &result.UDPParams{FrameSizes: []int{64, 1514}, Rate: "fixed", OfferedBitsPerSecond: 1e9,
				Fragment: true, Trial: 1, SearchSteps: 6},
			SiteA: "fra", SiteB: "nyc", RecoverDown: 2, Tunnels: 100, Spread: true,
		},
		Repetition: rep,
		Connect: &result.Connect{Setup: 0.213, Handshake: 0.0011, Total: 0.2141, Probe: 0.0009, Probes: 1,
			Harness: 0.0002, Interval: 0.01, Tool: "rr probe"},
		Recover: &result.Recover{Dev: "eth0", Down: 2.001, Interval: 0.01, Sent: 412, Lost: 199, Recovered: true,
			Recovery: 0.0097, Outage: 2.0112, Restored: []string{"route 198.18.0.0/24"}, Tool: "rr stream",
			Rekey: &result.Rekey{How: "swanctl --rekey --child tunbench", Took: 0.052, Sent: 350, Lost: 1, Outage: 0.098, Error: "none"}},
		Scale: &result.Scale{Tunnels: 100, Unit: "VXLAN device", Setup: 0.091, Teardown: 0.099, Adds: 200,
			AddP50: 0.00028, AddP99: 0.0028, SlabBefore: 1 << 30, SlabAfter: 1<<30 + 8<<20, DaemonRSS: 18 << 20,
			PerTunnel: 82227, SharedKernel: true, ToolRSSBefore: 41 << 20, ToolPeakRSS: 47 << 20},
		Reconf: &result.Reconf{How: "vxlan device tb1a2b3c-vx0064 (VNI 142)", Took: 0.012, Interval: 0.01, Sent: 300,
			Lost: 2, Outage: 0.107, Blocked: 0.02, BitsPerSecond: 24.4e9, MinIntervalBitsPerSecond: 22.6e9,
			Tool: "rr stream", Error: "none"},
		Status:   result.StatusFailed,
		Error:    "iperf3 client: exit status 1: unable to connect",
		Started:  start,
		Finished: start.Add(17 * time.Second),
		Throughput: &result.Throughput{
			Tool: "iperf3", Version: "3.16", BitsPerSecond: 9.41e9, SenderBitsPerSecond: 9.43e9,
			Bytes: 11762500000, Retransmits: 12, Seconds: 10.000042,
			Intervals: []result.Interval{
				{Start: 0, End: 1, Bytes: 1176250000, BitsPerSecond: 9.41e9, Retransmits: 3, Omitted: true},
				{Start: 1, End: 2.0001, Bytes: 1176000000, BitsPerSecond: 9.408e9, Retransmits: 1},
			},
			SenderToolCPUPercent: 43.5, ReceiverToolCPUPercent: 61.25, ReverseBitsPerSecond: 4.7e9,
			SenderCongestion: "cubic", ReceiverCongestion: "cubic",
		},
		Parallel: &result.Parallel{
			Streams: 130, StreamsPerProcess: 128, BitsPerSecond: 2e10, SenderBitsPerSecond: 2.01e10,
			Bytes: 25e9, Retransmits: 77,
			Intervals: []result.Interval{{Start: 1, End: 2, Bytes: 25e8, BitsPerSecond: 2e10, Retransmits: 7, Omitted: true}},
			Processes: []result.ProcessThroughput{{
				Port: 5301, Streams: 65, BitsPerSecond: 1e10, SenderBitsPerSecond: 1.01e10, Bytes: 12e9,
				Retransmits: 40, SenderToolCPUPercent: 97.5, ReceiverToolCPUPercent: 55, Error: "none really", Congestion: "cubic",
			}},
			Tunnels: []result.SpreadTunnel{{Tunnel: 49, Address: "198.19.128.99", Device: "tb1a2b3c-vx0031",
				RxBytes: 12e9 + 1, TxBytes: 2e8, Error: "none really"}},
			CPU: &result.CPU{
				Interval: 1, Cores: 2, BusyMin: 90, BusyAvg: 95, BusyMax: 99,
				PerCore:   []result.CoreUsage{{CPU: 1, User: 10, System: 30, Softirq: 25, Irq: 1, Idle: 34}},
				Samples:   []result.CPUSample{{T: 1, User: 1, System: 2, Softirq: 1.5, Busy: 4.5}},
				Processes: []result.ProcessCPU{{Role: "iperf3-client-5301", Side: "sender", PID: 77, User: 1, System: 2, Cores: 0.97}},
				Split:     "approximate", SenderCores: 0.97, ReceiverCores: 0.5, SoftirqCores: 0.3,
				Hosts: []result.HostCPU{{Host: "fra", Side: "sender", Cores: 2, BusyMin: ptr(40.0), BusyAvg: 50, BusyMax: 60, SoftirqCores: 0.2,
					PerCore: []result.CoreUsage{{CPU: 1, User: 1, System: 2, Softirq: 3, Irq: 0.5, Idle: 93.5}}}},
			},
		},
		MTUProbe: &result.MTUProbe{ConfiguredMTU: 1450, PathMTU: 1404, Mismatch: true, Probes: 11, Tool: "ping -M do",
			TCPMSS: 1365, TCPBitsPerSecond: 1e3, TCPSeconds: 2, Stalled: true, TCPError: "timeout"},
		UDPSizes: []result.UDPSize{{
			FrameBytes: 64, PayloadBytes: 22, Fragmented: true, NDRBitsPerSecond: 1e8, PDRBitsPerSecond: 2e8, Error: "x",
			Result: &result.UDPTrial{OfferedBitsPerSecond: 1e9, Seconds: 3, Sent: 100, Received: 90, Lost: 10, LossPercent: 10,
				OutOfOrder: 1, PacketsPerSecond: 30, BitsPerSecond: 5280, SentBitsPerSec: 5866, DelayMin: 3, DelayP50: 4, DelayMean: 4.5,
				DelayP99: 9, DelayMax: 12, Jitter: 0.5, SenderCores: 0.9, ReceiverCores: 0.4,
				ClockOffset: -120, ClockUncertainty: 35, DelayNote: "corrected",
				SendBuffer: 4194304, ReceiveBuffer: 212992, BufferNote: "receiver's receive buffer short"},
			Trials: []result.UDPTrial{{OfferedBitsPerSecond: 1e9, Seconds: 3, Sent: 100, Received: 90, Lost: 10, LossPercent: 10,
				OutOfOrder: 1, PacketsPerSecond: 30, BitsPerSecond: 5280, SentBitsPerSec: 5866, DelayMin: 3, DelayP50: 4, DelayMean: 4.5,
				DelayP99: 9, DelayMax: 12, Jitter: 0.5, SenderCores: 0.9, ReceiverCores: 0.4,
				ClockOffset: -120, ClockUncertainty: 35, DelayNote: "corrected",
				SendBuffer: 4194304, ReceiveBuffer: 212992, BufferNote: "receiver's receive buffer short"}},
		}},
		LatencyUnderLoad: &result.LatencyUnderLoad{
			Load: "tcp_stream", LoadBitsPerSecond: 9e9,
			Idle:     &result.Latency{Tool: "rr", Version: "1", Samples: 10, Min: 1, Mean: 2, P50: 2, P90: 3, P99: 4, Max: 5, StdDev: 1, CDF: []result.Quantile{{Fraction: 0.5, RTT: 2}}, Congestion: "cubic"},
			Loaded:   &result.Latency{Tool: "rr", Version: "1", Samples: 10, Min: 10, Mean: 20, P50: 20, P90: 30, P99: 40, Max: 50, StdDev: 10, CDF: []result.Quantile{{Fraction: 0.5, RTT: 20}}, Congestion: "cubic"},
			P50Ratio: 10, P99Ratio: 10,
		},
		Derived: &result.Derived{
			CeilingFraction: 0.94, CeilingBitsPerSecond: 23.5e9, PercentOfCeiling: 40, LineRate: 25e9,
			LineRateSource: "scenario", PercentOfLineRate: 37.6, LoadToolSaturated: []string{"iperf3-client"},
			Cost: &result.Cost{
				Basis: "cycles", BasisNote: "perf_event cycles on every cpu", SenderPackets: 1, SenderBytes: 2, ReceiverPackets: 3,
				ReceiverBytes: 4, Seconds: 5, SenderNsPerPacket: 6, ReceiverNsPerPacket: 7, SenderNsPerByte: 8,
				ReceiverNsPerByte: 9, TotalNsPerPacket: 10,
				Cycles: 11, SenderCyclesPerPacket: 12, ReceiverCyclesPerPacket: 13, SenderCyclesPerByte: 14,
				ReceiverCyclesPerByte: 15, TotalCyclesPerPacket: 16,
			},
		},
		Latency: &result.Latency{
			Tool: "sockperf", Version: "3.10", Samples: 123456, Min: 11.2, Mean: 19.8, P50: 18.9,
			P90: 24.1, P99: 35.7, Max: 412.5, StdDev: 4.4,
			CDF:        []result.Quantile{{Fraction: 0, RTT: 11.2}, {Fraction: 0.5, RTT: 18.9}, {Fraction: 1, RTT: 412.5}},
			Congestion: "cubic",
		},
		CPU: &result.CPU{
			Interval: 0.5, Cores: 48, BusyMin: 3.1, BusyAvg: 4.6, BusyMax: 6.2,
			PerCore: []result.CoreUsage{{CPU: 3, User: 10, System: 30, Softirq: 25, Irq: 1, Idle: 34}},
			Samples: []result.CPUSample{{T: 0.5, User: 1, System: 2, Softirq: 1.5, Busy: 4.5}},
			Processes: []result.ProcessCPU{{
				Role: "iperf3-client", Side: "sender", PID: 4242, User: 1.25, System: 3.5, Cores: 0.475,
			}},
			Split: "approximate", SenderCores: 0.9, ReceiverCores: 1.1, SoftirqCores: 0.8,
			Hosts: []result.HostCPU{{Host: "fra", Side: "sender", Cores: 2, BusyMin: ptr(40.0), BusyAvg: 50, BusyMax: 60, SoftirqCores: 0.2,
				PerCore: []result.CoreUsage{{CPU: 1, User: 1, System: 2, Softirq: 3, Irq: 0.5, Idle: 93.5}}}},
		},
		Meta: result.Meta{
			BackgroundBusy: 2.5, Busy: true, Emulated: true, Kernel: "6.8.0-45-generic",
			Devices: []result.Device{{
				Side: "a", Name: "vx0", Kind: "vxlan", MTU: 1430,
				Offloads: map[string]bool{"tx-checksumming": true, "generic-receive-offload": false},
			}},
			Hosts: []result.Host{{Site: "fra", Side: "a", Hostname: "h1", Kernel: "6.1", Arch: "amd64", CPUModel: "x",
				CPUCount: 2, MemoryMiB: 4096, Tunbench: "devel", GoVersion: "go1.26", Tools: map[string]string{"iperf3": "3.12"},
				OSRelease: "Debian GNU/Linux 12 (bookworm)", Class: result.ClassEmulated, Hypervisor: "QEMU TCG",
				ClassEvidence: `CPUID leaf 0x40000000 "TCGTCGTCGTCG"`,
				Emulated:      true, Sysctls: map[string]string{"net.core.rmem_max": "212992"},
				NIC: &result.NIC{Dev: "eth1", Driver: "ice", Version: "6.1", Firmware: "4.40", BusInfo: "0000:3b:00.0", SpeedMbps: 100000, MTU: 9000}}},
			Variant: "netdev datapath", Datapath: result.DatapathNetdev, CongestionControl: "cubic",
			Extra: map[string]string{"vni": "42"},
		},
	}
}

// eachLocation runs f against each kind of store: a SQLite file and a
// PostgreSQL database on a real server of the test's own (pgtest). loc
// is a new, empty database's --db value.
func eachLocation(t *testing.T, f func(t *testing.T, loc string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { f(t, filepath.Join(t.TempDir(), "results.db")) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.URL(t)) })
}

// eachBackend runs f against each kind of store; open makes a new, empty
// store of that kind, closed when the test ends.
func eachBackend(t *testing.T, f func(t *testing.T, open func(*testing.T) *Store)) {
	t.Helper()
	eachLocation(t, func(t *testing.T, loc string) {
		first := true
		f(t, func(t *testing.T) *Store {
			t.Helper()
			at := loc
			if !first {
				at = freshLike(t, loc)
			}
			first = false
			return openAt(t, at)
		})
	})
}

// freshLike is a new, empty database of loc's kind.
func freshLike(t *testing.T, loc string) string {
	if strings.HasPrefix(loc, "postgres://") {
		return pgtest.URL(t)
	}
	return filepath.Join(t.TempDir(), "results.db")
}

func openAt(t *testing.T, loc string) *Store {
	t.Helper()
	s, err := Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "results.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// zeroFields lists the paths of zero-valued fields under v, so the round-trip
// fixture provably exercises every field, including ones added later.
func zeroFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return zeroFields(v.Elem(), path)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if v.Interface().(time.Time).IsZero() {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i := range v.NumField() {
			out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return out
	case reflect.Slice:
		if v.Len() == 0 {
			return []string{path}
		}
		var out []string
		for i := range v.Len() {
			out = append(out, zeroFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Map:
		if v.Len() == 0 {
			return []string{path}
		}
		return nil
	case reflect.Bool:
		return nil // false is a meaningful value; both are covered elsewhere
	default:
		if v.IsZero() {
			return []string{path}
		}
		return nil
	}
}

func ptr[T any](v T) *T { return &v }
