package runner

import (
	"strings"

	"github.com/tunbench/tunbench/internal/nic"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
)

// Per-packet framing on an Ethernet wire that the MTU does not include:
// header 14, FCS 4, preamble and start delimiter 8, inter-frame gap 12.
const ethernetFraming = 14 + 4 + 8 + 12

// tcpTimestamps is the TCP option Linux sends on every segment by default.
const tcpTimestamps = 12

// SaturationCores is the share of one core at which a load-tool process
// may itself be the limit.
const SaturationCores = 0.95

// ceilingFraction is the share of the underlay's wire bytes that can be
// TCP payload: a full-size inner TCP segment (overlay MTU less the inner
// IP and TCP headers and timestamps, or less when mss caps it) over the
// bytes it takes on the wire (payload, inner TCP and IP headers, the
// method's overhead, Ethernet framing).
func ceilingFraction(family string, overlayMTU, overhead, mss int) float64 {
	ip := 20
	if family == "ipv6" {
		ip = 40
	}
	seg := overlayMTU - ip - 20 // the MSS the MTU allows
	if mss > 0 {
		seg = min(seg, mss)
	}
	payload := seg - tcpTimestamps
	if payload <= 0 {
		return 0
	}
	wire := payload + tcpTimestamps + 20 + ip + overhead + ethernetFraming
	return float64(payload) / float64(wire)
}

// saturated lists the load-tool processes that used SaturationCores or
// more of a core.
func saturated(cpu *result.CPU) []string {
	if cpu == nil {
		return nil
	}
	var out []string
	for _, p := range cpu.Processes {
		if (strings.HasPrefix(p.Role, "iperf3") || strings.HasPrefix(p.Role, "udpgen")) && p.Cores >= SaturationCores {
			out = append(out, p.Role)
		}
	}
	return out
}

// cost computes CPU per packet and per byte over a span of device
// counters: the data goes from a to b (forward), b to a (reverse) or both
// ways (bidir, where sender and receiver sum both devices). The ns
// figures are CPU time from the samples; when the span counted cycles the
// basis is cycles and the cycle figures are added, else the basis is CPU
// time and the note says why there are no cycles.
func cost(cpu *result.CPU, sp *span, direction string) *result.Cost {
	if cpu == nil || sp == nil || !sp.ok {
		return nil
	}
	secs := sp.stop.Sub(sp.start).Seconds()
	if secs <= 0 {
		return nil
	}
	d := func(side int) (txp, txb, rxp, rxb uint64) {
		b, a := sp.before[side], sp.after[side]
		return a.TxPackets - b.TxPackets, a.TxBytes - b.TxBytes, a.RxPackets - b.RxPackets, a.RxBytes - b.RxBytes
	}
	aTxP, aTxB, aRxP, aRxB := d(0)
	bTxP, bTxB, bRxP, bRxB := d(1)
	c := &result.Cost{Seconds: secs}
	switch direction {
	case scenario.DirReverse:
		c.SenderPackets, c.SenderBytes, c.ReceiverPackets, c.ReceiverBytes = bTxP, bTxB, aRxP, aRxB
	case scenario.DirBidir:
		c.SenderPackets, c.SenderBytes = aTxP+bTxP, aTxB+bTxB
		c.ReceiverPackets, c.ReceiverBytes = aRxP+bRxP, aRxB+bRxB
	default:
		c.SenderPackets, c.SenderBytes, c.ReceiverPackets, c.ReceiverBytes = aTxP, aTxB, bRxP, bRxB
	}
	per := func(cores float64, n uint64) float64 {
		if n == 0 {
			return 0
		}
		return cores * secs * 1e9 / float64(n)
	}
	busy := cpu.BusyAvg / 100 * float64(cpu.Cores)
	c.SenderNsPerPacket = per(cpu.SenderCores, c.SenderPackets)
	c.ReceiverNsPerPacket = per(cpu.ReceiverCores, c.ReceiverPackets)
	c.SenderNsPerByte = per(cpu.SenderCores, c.SenderBytes)
	c.ReceiverNsPerByte = per(cpu.ReceiverCores, c.ReceiverBytes)
	c.TotalNsPerPacket = per(busy, c.SenderPackets)

	if sp.cyclesErr != nil || sp.cycles == 0 {
		c.Basis = result.CostCPUTime
		why := "no cycles counted"
		if sp.cyclesErr != nil {
			why = sp.cyclesErr.Error()
		}
		c.BasisNote = "CPU time from /proc: hardware cycle counters are not available here (" + why + ")"
		return c
	}
	c.Basis, c.BasisNote = result.CostCycles, "cycles counted on every CPU by perf_event (PERF_COUNT_HW_CPU_CYCLES, system wide); sender and receiver shares by their CPU time"
	c.Cycles = sp.cycles
	cyc := func(share float64, n uint64) float64 {
		if n == 0 || busy <= 0 {
			return 0
		}
		return float64(sp.cycles) * share / busy / float64(n)
	}
	c.SenderCyclesPerPacket = cyc(cpu.SenderCores, c.SenderPackets)
	c.ReceiverCyclesPerPacket = cyc(cpu.ReceiverCores, c.ReceiverPackets)
	c.SenderCyclesPerByte = cyc(cpu.SenderCores, c.SenderBytes)
	c.ReceiverCyclesPerByte = cyc(cpu.ReceiverCores, c.ReceiverBytes)
	if c.SenderPackets > 0 {
		c.TotalCyclesPerPacket = float64(sp.cycles) / float64(c.SenderPackets)
	}
	return c
}

// derive computes the cell's derived figures from its own records.
// link is what the sending side's underlay device says about its link
// (zero when it could not be read); nic.LineRate decides the line rate.
func derive(c *result.Cell, overhead int, sp *span, link nic.LinkSpeed) *result.Derived {
	p := c.Params
	d := &result.Derived{CeilingFraction: ceilingFraction(p.Family, p.OverlayMTU, overhead, p.MSS)}
	bps := 0.0
	cpu := c.CPU
	switch {
	case c.Throughput != nil:
		bps = c.Throughput.BitsPerSecond
	case c.Parallel != nil:
		bps, cpu = c.Parallel.BitsPerSecond, c.Parallel.CPU
	}
	if rate, src := nic.LineRate(link, p.LineRate); rate > 0 {
		d.LineRate, d.LineRateSource = rate, src
		d.CeilingBitsPerSecond = rate * d.CeilingFraction
		if bps > 0 {
			d.PercentOfLineRate = 100 * bps / rate
			if d.CeilingBitsPerSecond > 0 {
				d.PercentOfCeiling = 100 * bps / d.CeilingBitsPerSecond
			}
		}
	}
	d.LoadToolSaturated = saturated(c.CPU)
	if c.Parallel != nil {
		d.LoadToolSaturated = append(d.LoadToolSaturated, saturated(c.Parallel.CPU)...)
	}
	d.Cost = cost(cpu, sp, p.Direction)
	return d
}
