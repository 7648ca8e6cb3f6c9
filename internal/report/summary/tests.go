package summary

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// TestSummary holds the figures of the tests beyond tcp_stream and tcp_rr
// and the derived figures, over the ok repetitions of one cell. Figures
// that were not measured have N == 0 and are omitted from JSON.
type TestSummary struct {
	// Parallel is the parallel test's summed receiver rate in Gbit/s;
	// Processes the number of iperf3 processes it used.
	Parallel              Figure   `json:"parallel_gbps,omitzero"`
	Processes             int      `json:"parallel_processes,omitempty"`
	ParallelPercentNative *float64 `json:"parallel_percent_of_native_percent,omitempty"`
	ParallelSenderCPU     Figure   `json:"parallel_sender_cpu_cores,omitzero"`
	ParallelReceiverCPU   Figure   `json:"parallel_receiver_cpu_cores,omitzero"`
	// Latency under load: idle and loaded percentiles and loaded/idle.
	IdleP50   Figure `json:"idle_p50_rtt_us,omitzero"`
	IdleP99   Figure `json:"idle_p99_rtt_us,omitzero"`
	LoadedP50 Figure `json:"loaded_p50_rtt_us,omitzero"`
	LoadedP99 Figure `json:"loaded_p99_rtt_us,omitzero"`
	P50Ratio  Figure `json:"loaded_p50_ratio,omitzero"`
	P99Ratio  Figure `json:"loaded_p99_ratio,omitzero"`
	LoadGbps  Figure `json:"load_gbps,omitzero"`
	// Derived figures (result.Derived), summarised.
	CeilingPercent      Figure `json:"ceiling_percent_of_wire,omitzero"`
	PercentOfCeiling    Figure `json:"percent_of_ceiling_percent,omitzero"`
	PercentOfLineRate   Figure `json:"percent_of_line_rate_percent,omitzero"`
	SenderNsPerPacket   Figure `json:"sender_ns_per_packet,omitzero"`
	ReceiverNsPerPacket Figure `json:"receiver_ns_per_packet,omitzero"`
	SenderNsPerByte     Figure `json:"sender_ns_per_byte,omitzero"`
	ReceiverNsPerByte   Figure `json:"receiver_ns_per_byte,omitzero"`
	CostBasis           string `json:"cost_basis,omitempty"`
	// MTU probe: the overlay MTU configured, the smallest path MTU found
	// over the repetitions, whether any repetition found a mismatch or a
	// stalled TCP transfer above it.
	ConfiguredMTU int  `json:"configured_mtu_bytes,omitempty"`
	PathMTU       int  `json:"path_mtu_bytes,omitempty"`
	MTUMismatch   bool `json:"mtu_mismatch,omitempty"`
	MSSProbe      int  `json:"mss_probe_bytes,omitempty"`
	MSSStalled    bool `json:"mss_probe_stalled,omitempty"`
	// UDP is the udp_sizes test, one entry per frame size.
	UDP []UDPSizeSummary `json:"udp_sizes,omitempty"`
	// Connect is the connect and recover tests.
	Connect *ConnectSummary `json:"connect,omitempty"`
	// Saturated lists the load-tool roles that used 95% or more of a core
	// in any repetition: the tool, not the tunnel, may be the limit.
	Saturated []string `json:"load_tool_saturated,omitempty"`
}

// UDPSizeSummary is one frame size of the udp_sizes test over the ok
// repetitions that measured it.
type UDPSizeSummary struct {
	FrameBytes       int    `json:"frame_bytes"`
	PayloadBytes     int    `json:"payload_bytes"`
	Fragmented       bool   `json:"fragmented"`
	PacketsPerSecond Figure `json:"packets_per_second,omitzero"`
	Gbps             Figure `json:"gbps,omitzero"`
	LossPercent      Figure `json:"loss_percent,omitzero"`
	OutOfOrder       Figure `json:"out_of_order_packets,omitzero"`
	DelayP50         Figure `json:"delay_p50_us,omitzero"`
	DelayP99         Figure `json:"delay_p99_us,omitzero"`
	Jitter           Figure `json:"jitter_us,omitzero"`
	NDRGbps          Figure `json:"ndr_gbps,omitzero"`
	PDRGbps          Figure `json:"pdr_gbps,omitzero"`
	// PercentNative is Gbps against native's at the same frame size and
	// parameters, when native ran.
	PercentNative *float64 `json:"percent_of_native_percent,omitempty"`
	// SenderCPU and ReceiverCPU are the tracked processes' cores of each
	// side (the generator and, in newer records, the tunnel daemons);
	// HostBusy the whole host's busy %, in records that have it.
	SenderCPU   Figure     `json:"sender_cpu_cores,omitzero"`
	ReceiverCPU Figure     `json:"receiver_cpu_cores,omitzero"`
	HostBusy    []HostBusy `json:"host_busy,omitempty"`
}

// Units of the test figures.
const (
	UnitPercent = "%"
	UnitRatio   = "ratio"
	UnitNs      = "ns"
	UnitPPS     = "packets/s"
	UnitPackets = "packets"
)

func summarizeUDP(reps []result.Cell) []UDPSizeSummary {
	type acc struct {
		s                                                       UDPSizeSummary
		pps, gbps, loss, ooo, p50, p99, jit, ndr, pdr, snd, rcv []float64
		cpus                                                    []*result.CPU
	}
	var order []int
	by := map[int]*acc{}
	for _, c := range reps {
		if c.Status != result.StatusOK {
			continue
		}
		for _, u := range c.UDPSizes {
			a := by[u.FrameBytes]
			if a == nil {
				a = &acc{s: UDPSizeSummary{FrameBytes: u.FrameBytes, PayloadBytes: u.PayloadBytes, Fragmented: u.Fragmented}}
				by[u.FrameBytes] = a
				order = append(order, u.FrameBytes)
			}
			if r := u.Result; r != nil {
				a.pps = append(a.pps, r.PacketsPerSecond)
				a.gbps = append(a.gbps, r.BitsPerSecond/1e9)
				a.loss = append(a.loss, r.LossPercent)
				a.ooo = append(a.ooo, float64(r.OutOfOrder))
				if r.DelayKnown() {
					a.p50, a.p99 = append(a.p50, r.DelayP50), append(a.p99, r.DelayP99)
				}
				a.jit = append(a.jit, r.Jitter)
				a.snd, a.rcv = append(a.snd, r.SenderCores), append(a.rcv, r.ReceiverCores)
				a.cpus = append(a.cpus, r.CPU)
			}
			if len(u.Trials) > 0 {
				a.ndr, a.pdr = append(a.ndr, u.NDRBitsPerSecond/1e9), append(a.pdr, u.PDRBitsPerSecond/1e9)
			}
		}
	}
	out := make([]UDPSizeSummary, 0, len(order))
	for _, f := range order {
		a := by[f]
		a.s.PacketsPerSecond, a.s.Gbps, a.s.LossPercent = FigureOf(UnitPPS, a.pps), FigureOf(UnitGbps, a.gbps), FigureOf(UnitPercent, a.loss)
		a.s.OutOfOrder, a.s.DelayP50, a.s.DelayP99 = FigureOf(UnitPackets, a.ooo), FigureOf(UnitMicros, a.p50), FigureOf(UnitMicros, a.p99)
		a.s.Jitter, a.s.NDRGbps, a.s.PDRGbps = FigureOf(UnitMicros, a.jit), FigureOf(UnitGbps, a.ndr), FigureOf(UnitGbps, a.pdr)
		a.s.SenderCPU, a.s.ReceiverCPU = FigureOf(UnitCores, a.snd), FigureOf(UnitCores, a.rcv)
		a.s.HostBusy = hostBusy(a.cpus)
		out = append(out, a.s)
	}
	return out
}

func summarizeTests(s *Summary, reps []result.Cell) {
	var par, psnd, prcv, ip50, ip99, lp50, lp99, r50, r99, lg, ceil, pceil, pline, snp, rnp, snb, rnb []float64
	ts := &TestSummary{}
	seen := false
	for _, c := range reps {
		if c.Status != result.StatusOK {
			continue
		}
		if p := c.Parallel; p != nil {
			seen = true
			par = append(par, p.BitsPerSecond/1e9)
			ts.Processes = max(ts.Processes, len(p.Processes))
			if p.CPU != nil {
				psnd = append(psnd, p.CPU.SenderCores)
				prcv = append(prcv, p.CPU.ReceiverCores)
			}
		}
		if m := c.MTUProbe; m != nil {
			seen = true
			ts.ConfiguredMTU = m.ConfiguredMTU
			if ts.PathMTU == 0 || m.PathMTU < ts.PathMTU {
				ts.PathMTU, ts.MSSProbe = m.PathMTU, m.TCPMSS
			}
			ts.MTUMismatch = ts.MTUMismatch || m.Mismatch
			ts.MSSStalled = ts.MSSStalled || m.Stalled
		}
		if l := c.LatencyUnderLoad; l != nil && l.Idle != nil && l.Loaded != nil {
			seen = true
			ip50, ip99 = append(ip50, l.Idle.P50), append(ip99, l.Idle.P99)
			lp50, lp99 = append(lp50, l.Loaded.P50), append(lp99, l.Loaded.P99)
			r50, r99 = append(r50, l.P50Ratio), append(r99, l.P99Ratio)
			lg = append(lg, l.LoadBitsPerSecond/1e9)
		}
		if d := c.Derived; d != nil {
			seen = true
			if d.CeilingFraction > 0 {
				ceil = append(ceil, 100*d.CeilingFraction)
			}
			if d.PercentOfCeiling > 0 {
				pceil = append(pceil, d.PercentOfCeiling)
			}
			if d.PercentOfLineRate > 0 {
				pline = append(pline, d.PercentOfLineRate)
			}
			for _, r := range d.LoadToolSaturated {
				if !slices.Contains(ts.Saturated, r) {
					ts.Saturated = append(ts.Saturated, r)
				}
			}
			if k := d.Cost; k != nil {
				ts.CostBasis = k.Basis
				if k.SenderNsPerPacket > 0 {
					snp = append(snp, k.SenderNsPerPacket)
					snb = append(snb, k.SenderNsPerByte)
				}
				if k.ReceiverNsPerPacket > 0 {
					rnp = append(rnp, k.ReceiverNsPerPacket)
					rnb = append(rnb, k.ReceiverNsPerByte)
				}
			}
		}
	}
	ts.UDP = summarizeUDP(reps)
	ts.Connect = summarizeConnect(reps)
	if !seen && len(ts.UDP) == 0 && ts.Connect == nil {
		return
	}
	ts.Parallel = FigureOf(UnitGbps, par)
	ts.ParallelSenderCPU, ts.ParallelReceiverCPU = FigureOf(UnitCores, psnd), FigureOf(UnitCores, prcv)
	ts.IdleP50, ts.IdleP99 = FigureOf(UnitMicros, ip50), FigureOf(UnitMicros, ip99)
	ts.LoadedP50, ts.LoadedP99 = FigureOf(UnitMicros, lp50), FigureOf(UnitMicros, lp99)
	ts.P50Ratio, ts.P99Ratio = FigureOf(UnitRatio, r50), FigureOf(UnitRatio, r99)
	ts.LoadGbps = FigureOf(UnitGbps, lg)
	ts.CeilingPercent = FigureOf(UnitPercent, ceil)
	ts.PercentOfCeiling = FigureOf(UnitPercent, pceil)
	ts.PercentOfLineRate = FigureOf(UnitPercent, pline)
	ts.SenderNsPerPacket, ts.ReceiverNsPerPacket = FigureOf(UnitNs, snp), FigureOf(UnitNs, rnp)
	ts.SenderNsPerByte, ts.ReceiverNsPerByte = FigureOf(UnitNs, snb), FigureOf(UnitNs, rnb)
	s.Tests = ts
}

// setParallelPercentNative fills the parallel test's % of native, with the
// same baseline rule as PercentNative.
func setParallelPercentNative(rows []Summary) {
	native := map[BaselineKey]float64{}
	for _, r := range rows {
		k := BaselineOf(r.Params)
		if _, dup := native[k]; dup || k.Tunnels != 0 || r.Method != NativeMethod || r.Tests == nil || r.Tests.Parallel.N == 0 {
			continue
		}
		native[k] = r.Tests.Parallel.Mean
	}
	for i := range rows {
		t := rows[i].Tests
		base, ok := native[NativeKey(rows[i].Params)]
		if !ok || base <= 0 || t == nil || t.Parallel.N == 0 {
			continue
		}
		p := Round6(100 * t.Parallel.Mean / base)
		t.ParallelPercentNative = &p
	}
}

// setUDPPercentNative fills each udp_sizes frame size's % of native: the
// received payload rate against native's at the same frame size, with the
// same baseline rule as PercentNative.
func setUDPPercentNative(rows []Summary) {
	type key struct {
		b     BaselineKey
		frame int
	}
	native := map[key]float64{}
	for _, r := range rows {
		if r.Method != NativeMethod || r.Tests == nil || TunnelCount(r.Params) != 0 {
			continue
		}
		for _, u := range r.Tests.UDP {
			k := key{BaselineOf(r.Params), u.FrameBytes}
			if _, dup := native[k]; !dup && u.Gbps.N > 0 {
				native[k] = u.Gbps.Mean
			}
		}
	}
	for i := range rows {
		if rows[i].Tests == nil {
			continue
		}
		for j := range rows[i].Tests.UDP {
			u := &rows[i].Tests.UDP[j]
			base, ok := native[key{NativeKey(rows[i].Params), u.FrameBytes}]
			if !ok || base <= 0 || u.Gbps.N == 0 {
				continue
			}
			p := Round6(100 * u.Gbps.Mean / base)
			u.PercentNative = &p
		}
	}
}

// extraParams names the parameters of a cell that differ from the
// defaults of older runs: a direction other than forward and a set MSS.
func extraParams(p result.Params) []string {
	var ps []string
	if p.Direction != "" && p.Direction != "forward" {
		ps = append(ps, p.Direction)
	}
	if p.MSS > 0 {
		ps = append(ps, fmt.Sprintf("MSS %d", p.MSS))
	}
	if p.WAN != nil {
		ps = append(ps, "wan "+p.WAN.Label())
	}
	if p.OffloadSet != "" {
		ps = append(ps, "offload set "+p.OffloadSet)
	}
	if p.SiteA != "" {
		ps = append(ps, p.SiteA+" → "+p.SiteB)
	}
	if p.Spread {
		ps = append(ps, "spread over tunnels")
	}
	return ps
}

// writeTestTables writes one table per test beyond tcp_stream and tcp_rr
// that ran, and the derived figures, after the main table.
func writeTestTables(b *strings.Builder, rows []Summary, v Varying) error {
	has := func(f func(*TestSummary) bool) bool {
		return slices.ContainsFunc(rows, func(r Summary) bool { return r.Tests != nil && f(r.Tests) })
	}
	name := func(r Summary) GridCell { return GridCell{Text: RowName(r, v)} }
	if has(func(t *TestSummary) bool { return t.Parallel.N > 0 }) {
		b.WriteString("\nparallel: streams spread over iperf3 processes, summed\n")
		cols := []GridColumn{{Header: "method", Left: true}, {Header: "streams"}, {Header: "procs"},
			{Header: "Gbit/s", join: " ± "}, {Header: "CI95", Left: true}, {Header: "% native"},
			{Header: "snd CPU"}, {Header: "rcv CPU"}}
		var grid []GridRow
		for _, r := range rows {
			t := r.Tests
			if t == nil || t.Parallel.N == 0 {
				continue
			}
			grid = append(grid, GridRow{Cells: []GridCell{name(r), {Text: strconv.Itoa(r.Params.Streams)}, {Text: strconv.Itoa(t.Processes)},
				num(t.Parallel, 2, false), halfWidth(t.Parallel, 2), percent(t.ParallelPercentNative),
				num(t.ParallelSenderCPU, 2, true), num(t.ParallelReceiverCPU, 2, true)}})
		}
		if err := RenderGrid(b, cols, grid); err != nil {
			return err
		}
	}
	if has(func(t *TestSummary) bool { return t.LoadedP50.N > 0 }) {
		b.WriteString("\nlatency under load: request/response idle, then while tcp_stream saturates the tunnel\n")
		cols := []GridColumn{{Header: "method", Left: true}, {Header: "idle p50 µs"}, {Header: "idle p99 µs"},
			{Header: "loaded p50 µs"}, {Header: "loaded p99 µs"}, {Header: "p50 ×"}, {Header: "p99 ×"}, {Header: "load Gbit/s"}}
		var grid []GridRow
		for _, r := range rows {
			t := r.Tests
			if t == nil || t.LoadedP50.N == 0 {
				continue
			}
			grid = append(grid, GridRow{Cells: []GridCell{name(r), num(t.IdleP50, 1, false), num(t.IdleP99, 1, false),
				num(t.LoadedP50, 1, false), num(t.LoadedP99, 1, false), num(t.P50Ratio, 2, false), num(t.P99Ratio, 2, false),
				num(t.LoadGbps, 2, false)}})
		}
		if err := RenderGrid(b, cols, grid); err != nil {
			return err
		}
	}
	if has(func(t *TestSummary) bool { return t.PathMTU > 0 }) {
		b.WriteString("\nmtu probe: largest packet crossing with DF set, then TCP with an MSS one byte above it\n")
		cols := []GridColumn{{Header: "method", Left: true}, {Header: "configured MTU"}, {Header: "path MTU"},
			{Header: "mismatch", Left: true}, {Header: "MSS probe"}, {Header: "stalled", Left: true}}
		var grid []GridRow
		yes := func(b bool) GridCell {
			if b {
				return GridCell{Text: "YES"}
			}
			return GridCell{Text: "no"}
		}
		for _, r := range rows {
			t := r.Tests
			if t == nil || t.PathMTU == 0 {
				continue
			}
			grid = append(grid, GridRow{Cells: []GridCell{name(r), {Text: strconv.Itoa(t.ConfiguredMTU)}, {Text: strconv.Itoa(t.PathMTU)},
				yes(t.MTUMismatch), {Text: strconv.Itoa(t.MSSProbe)}, yes(t.MSSStalled)}})
		}
		if err := RenderGrid(b, cols, grid); err != nil {
			return err
		}
	}
	if has(func(t *TestSummary) bool { return len(t.UDP) > 0 }) {
		b.WriteString("\nudp sizes: tunbench's UDP generator per frame size (one-way delay on one clock)\n")
		cols := []GridColumn{{Header: "method", Left: true}, {Header: "frame"}, {Header: "payload"}, {Header: "kpps"},
			{Header: "Gbit/s"}, {Header: "% native"}, {Header: "loss %"}, {Header: "ooo"}, {Header: "p50 µs"}, {Header: "p99 µs"},
			{Header: "jitter µs"}, {Header: "NDR Gbit/s"}, {Header: "PDR Gbit/s"}}
		var grid []GridRow
		for _, r := range rows {
			if r.Tests == nil {
				continue
			}
			for _, u := range r.Tests.UDP {
				frame := strconv.Itoa(u.FrameBytes)
				if u.Fragmented {
					frame += " frag"
				}
				kpps := u.PacketsPerSecond
				kpps.Mean /= 1000
				grid = append(grid, GridRow{Cells: []GridCell{name(r), {Text: frame}, {Text: strconv.Itoa(u.PayloadBytes)},
					num(kpps, 1, false), num(u.Gbps, 3, false), percent(u.PercentNative), num(u.LossPercent, 2, false), num(u.OutOfOrder, 0, false),
					num(u.DelayP50, 0, false), num(u.DelayP99, 0, false), num(u.Jitter, 1, false),
					num(u.NDRGbps, 3, false), num(u.PDRGbps, 3, false)}})
			}
		}
		if err := RenderGrid(b, cols, grid); err != nil {
			return err
		}
	}
	if err := writeConnectTable(b, rows, v); err != nil {
		return err
	}
	if has(func(t *TestSummary) bool { return t.CeilingPercent.N > 0 }) {
		basis := ""
		for _, r := range rows {
			if r.Tests != nil && r.Tests.CostBasis != "" {
				basis = r.Tests.CostBasis
			}
		}
		fmt.Fprintf(b, "\nderived: header ceiling, line rate, CPU cost per packet (%s)\n", OrDash(basis))
		cols := []GridColumn{{Header: "method", Left: true}, {Header: "ceiling %"}, {Header: "% ceiling"}, {Header: "% line"},
			{Header: "snd ns/pkt"}, {Header: "rcv ns/pkt"}, {Header: "load tool ≥95% core", Left: true}}
		var grid []GridRow
		for _, r := range rows {
			t := r.Tests
			if t == nil || t.CeilingPercent.N == 0 {
				continue
			}
			sat := Missing
			if len(t.Saturated) > 0 {
				sat = strings.Join(t.Saturated, ", ")
			}
			grid = append(grid, GridRow{Cells: []GridCell{name(r), num(t.CeilingPercent, 1, false), num(t.PercentOfCeiling, 1, false),
				num(t.PercentOfLineRate, 1, false), num(t.SenderNsPerPacket, 0, false), num(t.ReceiverNsPerPacket, 0, false),
				{Text: sat}}})
		}
		if err := RenderGrid(b, cols, grid); err != nil {
			return err
		}
	}
	return nil
}

// testDefinitions explains the columns of the test tables that were written.
func testDefinitions(rows []Summary) []string {
	if !slices.ContainsFunc(rows, func(r Summary) bool { return r.Tests != nil }) {
		return nil
	}
	return []string{
		"ceiling %: share of the underlay's wire bytes (Ethernet framing included) that can be TCP payload " +
			"with this method's headers at this MTU (docs/methods.md); % ceiling and % line: throughput over " +
			"that ceiling and over the line rate, only when the line rate is known (never on veth).",
		"ns/pkt: CPU nanoseconds of the sender's/receiver's processes per packet the underlay device counted " +
			"over the same interval (GSO/GRO packets count once).",
		"load tool ≥95% core: iperf3 processes that used 95% or more of a core: the load tool, not the tunnel, " +
			"may be the limit.",
	}
}
