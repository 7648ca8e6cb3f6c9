package runner

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/sample"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// The ceiling arithmetic, by hand (docs/methods.md shows the same sums).
func TestCeilingFraction(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		family                string
		overlay, overhead, mm int
		payload, wire         int
	}{
		// native, IPv4, MTU 1500: 1500-20-20-12 = 1448 payload; wire 1500+38.
		{"native v4 1500", "ipv4", 1500, 0, 0, 1448, 1538},
		// vxlan v4: overlay 1450, payload 1398; wire 1398+32+20+50+38 = 1538.
		{"vxlan v4 1500", "ipv4", 1450, 50, 0, 1398, 1538},
		// vxlan v6: overlay 1430, inner IPv6 40: payload 1358; wire 1358+32+40+70+38 = 1538.
		{"vxlan v6 1500", "ipv6", 1430, 70, 0, 1358, 1538},
		// wireguard v4 (60 bytes): overlay 1440, payload 1388.
		{"wireguard v4", "ipv4", 1440, 60, 0, 1388, 1538},
		// macsec (SecTAG 16 + ICV 16): overlay 1468, payload 1416.
		{"macsec v4", "ipv4", 1468, 32, 0, 1416, 1538},
		// l2tpv3 encap ip v4 (20 + session 4 + Ethernet 14): overlay 1462, payload 1410.
		{"l2tpv3 ip v4", "ipv4", 1462, 38, 0, 1410, 1538},
		// MSS 216 caps the segment: payload 204; wire 204+32+20+0+38 = 294.
		{"native mss 216", "ipv4", 1500, 0, 216, 204, 294},
		// jumbo: 9000-52 = 8948; wire 9038.
		{"native 9000", "ipv4", 9000, 0, 0, 8948, 9038},
	} {
		got := ceilingFraction(tc.family, tc.overlay, tc.overhead, tc.mm)
		want := float64(tc.payload) / float64(tc.wire)
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: ceiling %v, want %d/%d = %v", tc.name, got, tc.payload, tc.wire, want)
		}
	}
}

// The cost per packet on known counters: 2 s, sender 0.5 core over 1e6
// packets is 1000 ns a packet.
func TestCostOnKnownCounters(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sp := &span{ok: true, start: t0, stop: t0.Add(2 * time.Second)}
	sp.before[0] = sample.Counters{TxPackets: 100, TxBytes: 1000, RxPackets: 7, RxBytes: 70}
	sp.after[0] = sample.Counters{TxPackets: 1_000_100, TxBytes: 1_500_001_000, RxPackets: 500_007, RxBytes: 33_000_070}
	sp.before[1] = sample.Counters{RxPackets: 5, RxBytes: 50}
	sp.after[1] = sample.Counters{RxPackets: 1_000_005, RxBytes: 1_500_000_050, TxPackets: 500_000, TxBytes: 33_000_000}
	cpu := &result.CPU{SenderCores: 0.5, ReceiverCores: 0.25, BusyAvg: 50, Cores: 2}
	c := cost(cpu, sp, "forward")
	if c.SenderPackets != 1_000_000 || c.ReceiverPackets != 1_000_000 || c.SenderBytes != 1_500_000_000 {
		t.Fatalf("counters %+v", c)
	}
	check := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("sender ns/packet", c.SenderNsPerPacket, 1000)
	check("receiver ns/packet", c.ReceiverNsPerPacket, 500)
	check("sender ns/byte", c.SenderNsPerByte, 1e9/1.5e9)
	check("total ns/packet", c.TotalNsPerPacket, 2000) // 1 core of 2 busy
	if c.Basis != result.CostCPUTime || c.BasisNote == "" {
		t.Errorf("basis %q (%q), want cpu_time with a reason", c.Basis, c.BasisNote)
	}
	r := cost(cpu, sp, "reverse") // b sends the 500k packets a receives
	if r.SenderPackets != 500_000 || r.ReceiverPackets != 500_000 {
		t.Errorf("reverse counters %+v", r)
	}
	if cost(cpu, &span{}, "forward") != nil {
		t.Error("cost without counters is not nil")
	}
}

func TestSaturated(t *testing.T) {
	cpu := &result.CPU{Processes: []result.ProcessCPU{
		{Role: "iperf3-client", Cores: 0.97}, {Role: "iperf3-server", Cores: 0.6}, {Role: "wireguard-go-a", Cores: 1.2},
	}}
	got := saturated(cpu)
	if len(got) != 1 || got[0] != "iperf3-client" {
		t.Errorf("saturated = %v, want [iperf3-client] (daemons are the tunnel, not the load tool)", got)
	}
}

// A resumed run measures only the cells the database lacks.
func TestRemaining(t *testing.T) {
	steps := []plan.Step{{Index: 1, Key: "a", Repetition: 1}, {Index: 2, Key: "b", Repetition: 1}, {Index: 3, Key: "a", Repetition: 2}}
	got := Remaining(steps, []result.Cell{{Key: "a", Repetition: 1, Status: result.StatusFailed}})
	if len(got) != 2 || got[0].Index != 2 || got[1].Index != 3 {
		t.Errorf("Remaining = %+v", got)
	}
}

// The line rate in the derived figures: a physical device's speed wins
// over the scenario's, a veth's counts as nothing.
func TestDeriveLineRate(t *testing.T) {
	cell := func(lineRate float64) *result.Cell {
		return &result.Cell{
			Params:     result.Params{Family: "ipv4", OverlayMTU: 1500, LineRate: lineRate},
			Throughput: &result.Throughput{BitsPerSecond: 5e9},
		}
	}
	d := derive(cell(0), 0, nil, nic.LinkSpeed{Driver: "ixgbe", SpeedMbps: 10000})
	if d.LineRate != 10e9 || d.LineRateSource != "device" || math.Abs(d.PercentOfLineRate-50) > 1e-9 {
		t.Errorf("ixgbe 10G: %+v", d)
	}
	d = derive(cell(25e9), 0, nil, nic.LinkSpeed{Driver: "veth", SpeedMbps: 10000})
	if d.LineRate != 25e9 || d.LineRateSource != "scenario" || math.Abs(d.PercentOfLineRate-20) > 1e-9 {
		t.Errorf("veth with line_rate 25G: %+v", d)
	}
	d = derive(cell(0), 0, nil, nic.LinkSpeed{Driver: "veth", SpeedMbps: 10000})
	if d.LineRate != 0 || d.LineRateSource != "" || d.PercentOfLineRate != 0 || d.CeilingBitsPerSecond != 0 {
		t.Errorf("veth without line_rate: %+v", d)
	}
}

// On the local testbed the underlay is a veth: its driver is read, and
// it gives no line rate.
func TestUnderlaySpeedOnVeth(t *testing.T) {
	tb := testbedtest.New(t, 1500)
	var cell result.Cell
	ls := underlaySpeed(tb.Pair(), "forward", &cell)
	if ls.Driver != "veth" {
		t.Fatalf("underlay driver %q (%v), want veth", ls.Driver, cell.Meta.Extra)
	}
	d := derive(&result.Cell{Params: result.Params{Family: "ipv4", OverlayMTU: 1500},
		Throughput: &result.Throughput{BitsPerSecond: 1e9}}, 0, nil, ls)
	if d.LineRate != 0 || d.LineRateSource != "" || d.PercentOfLineRate != 0 {
		t.Errorf("veth gave a line rate: %+v (device says %+v)", d, ls)
	}
}

// fakeCycles counts a fixed number of cycles, or fails to start.
type fakeCycles struct {
	n       uint64
	failure error
}

func (f *fakeCycles) start() error          { return f.failure }
func (f *fakeCycles) stop() (uint64, error) { return f.n, nil }

// counting makes a span's counter c.
func counting(c cycleCounter) func() cycleCounter { return func() cycleCounter { return c } }

// With a counter, the cost is in cycles: 2 s, 1 core of 2 busy, 6e9
// cycles on all CPUs; the sender's 0.5 core is half of them over 1e6
// packets: 3000 cycles a packet.
func TestCostInCycles(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sp := &span{ok: true, start: t0, stop: t0.Add(2 * time.Second), newCounter: counting(&fakeCycles{n: 6e9})}
	sp.startCycles()
	sp.stopCycles()
	sp.after[0] = sample.Counters{TxPackets: 1_000_000, TxBytes: 1_500_000_000}
	sp.after[1] = sample.Counters{RxPackets: 1_000_000, RxBytes: 1_500_000_000}
	cpu := &result.CPU{SenderCores: 0.5, ReceiverCores: 0.25, BusyAvg: 50, Cores: 2}
	c := cost(cpu, sp, "forward")
	if c.Basis != result.CostCycles || c.Cycles != 6e9 {
		t.Fatalf("basis %q (%q), cycles %d; want cycles, 6e9", c.Basis, c.BasisNote, c.Cycles)
	}
	check := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("sender cycles/packet", c.SenderCyclesPerPacket, 3000)
	check("receiver cycles/packet", c.ReceiverCyclesPerPacket, 1500)
	check("sender cycles/byte", c.SenderCyclesPerByte, 2)
	check("receiver cycles/byte", c.ReceiverCyclesPerByte, 1)
	check("total cycles/packet", c.TotalCyclesPerPacket, 6000)
	check("sender ns/packet (CPU time, always there)", c.SenderNsPerPacket, 1000)

	sp.newCounter = counting(&fakeCycles{failure: errors.New("perf_event_open cycles on cpu 0: no such device")})
	sp.startCycles()
	sp.stopCycles()
	c = cost(cpu, sp, "forward")
	if c.Basis != result.CostCPUTime || !strings.Contains(c.BasisNote, "no such device") || c.Cycles != 0 || c.SenderCyclesPerPacket != 0 {
		t.Errorf("failed counter: basis %q (%q), %+v", c.Basis, c.BasisNote, c)
	}
}

// The real counter on this machine: where the kernel exposes hardware
// cycle counters it counts them, else the cost falls back to CPU time
// and names the perf_event_open error.
func TestCostCycleCounterOrFallback(t *testing.T) {
	t0 := time.Now()
	sp := &span{ok: true, start: t0}
	sp.startCycles()
	started := sp.cyclesErr == nil
	startErr := sp.cyclesErr
	for i := 0; i < 1e6; i++ { // some cycles to count
		_ = math.Sqrt(float64(i))
	}
	sp.stopCycles()
	sp.stop = t0.Add(time.Second)
	sp.after[0] = sample.Counters{TxPackets: 1000, TxBytes: 1e6}
	sp.after[1] = sample.Counters{RxPackets: 1000, RxBytes: 1e6}
	c := cost(&result.CPU{SenderCores: 0.5, ReceiverCores: 0.5, BusyAvg: 50, Cores: 2}, sp, "forward")
	if started {
		if c.Basis != result.CostCycles || c.Cycles == 0 {
			t.Errorf("counters opened, yet basis %q (%q), cycles %d", c.Basis, c.BasisNote, c.Cycles)
		}
		return
	}
	t.Logf("no hardware cycle counters: %v", startErr)
	if c.Basis != result.CostCPUTime || !strings.Contains(c.BasisNote, "perf_event_open") || !strings.Contains(c.BasisNote, startErr.Error()) {
		t.Errorf("basis %q, note %q; want cpu_time naming %q", c.Basis, c.BasisNote, startErr)
	}
}
