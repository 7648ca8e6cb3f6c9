package render

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// Figures of the tests beyond tcp_stream and tcp_rr (issue 12's records):
// each is drawn only when the run stored the records it is made of.

// Sections of the test figures.
const (
	SectionLatencyLoad = "latency-under-load"
	SectionParallel    = "parallel"
	SectionLineRate    = "line-rate"
	SectionUDPSizes    = "udp-sizes"
)

// streamsGroups groups rows that differ only in streams (and the layout
// given by extra), in order of first appearance, keeping only rows for
// which keep is true and groups with at least two stream counts.
func streamsGroups(rows []summary.Summary, keep func(summary.Summary) bool) [][]summary.Summary {
	type groupKey struct {
		summary.BaselineKey
		perProcess int
	}
	var order []groupKey
	groups := map[groupKey][]summary.Summary{}
	for _, r := range rows {
		if !keep(r) {
			continue
		}
		k := summary.BaselineOf(r.Params)
		k.Streams = 0
		g := groupKey{k, r.Params.StreamsPerProcess}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], r)
	}
	var out [][]summary.Summary
	for _, g := range order {
		rs := groups[g]
		counts := map[int]bool{}
		for _, r := range rs {
			counts[r.Params.Streams] = true
		}
		if len(counts) >= 2 {
			out = append(out, rs)
		}
	}
	return out
}

// byLabel splits rows by label, in order of first appearance, each sorted
// by streams.
func byLabel(rs []summary.Summary) (labels []string, mine map[string][]summary.Summary) {
	mine = map[string][]summary.Summary{}
	for _, r := range rs {
		if _, ok := mine[r.Label]; !ok {
			labels = append(labels, r.Label)
		}
		mine[r.Label] = append(mine[r.Label], r)
	}
	for _, l := range labels {
		slices.SortFunc(mine[l], func(a, b summary.Summary) int { return cmp.Compare(a.Params.Streams, b.Params.Streams) })
	}
	return labels, mine
}

func groupDesc(p result.Params) string {
	return fmt.Sprintf("%s, MTU %d, offloads %s", p.Family, p.UnderlayMTU, offloadsName(p)) + ccSuffix(p) + restSuffix(p)
}

// addPoint appends f's mean and half-width at x when f was measured.
func addPoint(s *Series, x float64, f summary.Figure) {
	if f.N == 0 {
		return
	}
	s.X = append(s.X, x)
	s.Y = append(s.Y, summary.Round6(f.Mean))
	s.YErr = append(s.YErr, summary.Round6(f.HalfWidth))
}

// parallelCharts: the parallel test's aggregate throughput and its sender
// and receiver CPU against the number of streams (seed 000, Figs. 6a and
// 6b), log x, one line per method, for every group of rows with the same
// layout (streams per process) and at least two stream counts. The
// one-stream-per-process layout is drawn too; its % of line rate has its
// own figure.
func parallelCharts(runID string, rows []summary.Summary) []Chart {
	var out []Chart
	for _, rs := range streamsGroups(rows, func(r summary.Summary) bool { return r.Tests != nil && r.Tests.Parallel.N > 0 }) {
		p := rs[0].Params
		slug := fmt.Sprintf("%s-spp%d", summary.GroupSlug(p), p.StreamsPerProcess)
		desc := fmt.Sprintf("%s, %d per process", groupDesc(p), p.StreamsPerProcess)
		tp := Chart{
			ID: fmt.Sprintf("%s-parallel-throughput-%s", runID, slug), Section: SectionParallel, Kind: KindLines,
			Title: "Parallel throughput (" + desc + ")",
			Caption: fmt.Sprintf("Receiver throughput summed over every iperf3 process of the parallel test (%d streams per "+
				"process, started together on distinct ports), mean over repetitions with its 95%% confidence interval.", p.StreamsPerProcess),
			XLabel: "parallel TCP streams", YLabel: "throughput (Gbit/s)", LogX: true,
		}
		cpu := Chart{
			ID: fmt.Sprintf("%s-parallel-cpu-%s", runID, slug), Section: SectionParallel, Kind: KindLines,
			Title: "Parallel CPU (" + desc + ")",
			Caption: "CPU time per wall second (1.0 = one full core) attributed to the sender (solid) and the receiver " +
				"(dashed) during the parallel test, mean over repetitions with its 95% confidence interval.",
			XLabel: "parallel TCP streams", YLabel: "CPU (cores)", LogX: true,
		}
		labels, mine := byLabel(rs)
		for i, l := range labels {
			ts := Series{Name: l, Color: i}
			snd := Series{Name: l + " sender", Color: i}
			rcv := Series{Name: l + " receiver", Color: i, Dashed: true}
			for _, r := range mine[l] {
				x := float64(r.Params.Streams)
				addPoint(&ts, x, r.Tests.Parallel)
				addPoint(&snd, x, r.Tests.ParallelSenderCPU)
				addPoint(&rcv, x, r.Tests.ParallelReceiverCPU)
			}
			tp.Series = append(tp.Series, ts)
			for _, s := range []Series{snd, rcv} {
				if len(s.X) > 0 {
					cpu.Series = append(cpu.Series, s)
				}
			}
		}
		out = append(out, tp)
		if len(cpu.Series) > 0 {
			out = append(out, cpu)
		}
	}
	return out
}

// lineRateCharts: % of the line rate against the number of iperf3
// processes of one stream each (seed 000, Fig. 15), where the line rate
// is known (never on veth), one line per method.
func lineRateCharts(runID string, rows []summary.Summary) []Chart {
	keep := func(r summary.Summary) bool {
		return r.Params.StreamsPerProcess == 1 && r.Tests != nil && r.Tests.PercentOfLineRate.N > 0
	}
	var out []Chart
	for _, rs := range streamsGroups(rows, keep) {
		p := rs[0].Params
		c := Chart{
			ID: fmt.Sprintf("%s-line-rate-%s", runID, summary.GroupSlug(p)), Section: SectionLineRate, Kind: KindLines,
			Title: "% of line rate (" + groupDesc(p) + ")",
			Caption: "Throughput as a percentage of the underlay's line rate (from the device or the scenario) with N iperf3 " +
				"processes of one stream each, mean over repetitions with its 95% confidence interval.",
			XLabel: "iperf3 processes (one stream each)", YLabel: "% of line rate", LogX: true,
		}
		labels, mine := byLabel(rs)
		for i, l := range labels {
			s := Series{Name: l, Color: i}
			for _, r := range mine[l] {
				addPoint(&s, float64(r.Params.Streams), r.Tests.PercentOfLineRate)
			}
			c.Series = append(c.Series, s)
		}
		out = append(out, c)
	}
	return out
}

// udpSizeCharts: seed 002's packet-size sweep for one parameter set:
// throughput, one-way delay, jitter, loss and CPU against the frame size,
// one line per method (delay p99 and receiver CPU dashed).
func udpSizeCharts(runID string, ps paramSet, byKey map[string][]result.Cell) []Chart {
	type point struct {
		frame                               int
		gbps, p50, p99, jit, loss, snd, rcv []float64
	}
	p := ps.rows[0].Params
	desc := describeAll(p)
	mk := func(name, title, ylabel, caption string) Chart {
		return Chart{
			ID: fmt.Sprintf("%s-udp-%s-%s", runID, name, ps.key.Slug()), Section: SectionUDPSizes, Kind: KindLines,
			Title: title + " (" + desc + ")", Caption: caption,
			XLabel: "frame size (bytes)", YLabel: ylabel,
		}
	}
	const each = " One line per method, mean over repetitions with its 95% confidence interval; x is the Ethernet frame size of the inner packet."
	tp := mk("throughput", "UDP throughput", "throughput (Gbit/s)",
		"Received UDP payload rate of tunbench's generator per frame size."+each)
	delay := mk("delay", "UDP one-way delay", "one-way delay (µs)",
		"One-way delay, median solid and 99th percentile dashed (exact on the local testbed, where both ends share one clock)."+each)
	jitter := mk("jitter", "UDP jitter", "jitter (µs)", "RFC 3550 interarrival jitter."+each)
	loss := mk("loss", "UDP loss", "loss (%)", "Packets lost, in % of those sent."+each)
	cpu := mk("cpu", "UDP CPU", "CPU (cores)",
		"CPU time per wall second (1.0 = one full core) of the sender (solid) and the receiver (dashed)."+each)
	for i, r := range ps.rows {
		var pts []*point
		at := map[int]*point{}
		for _, c := range byKey[r.Key] {
			for _, u := range c.UDPSizes {
				t := u.Result
				if t == nil || u.Error != "" {
					continue
				}
				pt := at[u.FrameBytes]
				if pt == nil {
					pt = &point{frame: u.FrameBytes}
					at[u.FrameBytes] = pt
					pts = append(pts, pt)
				}
				pt.gbps = append(pt.gbps, t.BitsPerSecond/1e9)
				if t.DelayKnown() {
					pt.p50, pt.p99 = append(pt.p50, t.DelayP50), append(pt.p99, t.DelayP99)
				}
				pt.jit = append(pt.jit, t.Jitter)
				pt.loss = append(pt.loss, t.LossPercent)
				pt.snd, pt.rcv = append(pt.snd, t.SenderCores), append(pt.rcv, t.ReceiverCores)
			}
		}
		if len(pts) == 0 {
			continue
		}
		slices.SortFunc(pts, func(a, b *point) int { return cmp.Compare(a.frame, b.frame) })
		s := func(name string, dashed bool, unit string, get func(*point) []float64) Series {
			out := Series{Name: name, Color: i, Dashed: dashed}
			for _, pt := range pts {
				addPoint(&out, float64(pt.frame), summary.FigureOf(unit, get(pt)))
			}
			return out
		}
		tp.Series = append(tp.Series, s(r.Label, false, summary.UnitGbps, func(p *point) []float64 { return p.gbps }))
		delay.Series = append(delay.Series, s(r.Label+" p50", false, summary.UnitMicros, func(p *point) []float64 { return p.p50 }),
			s(r.Label+" p99", true, summary.UnitMicros, func(p *point) []float64 { return p.p99 }))
		jitter.Series = append(jitter.Series, s(r.Label, false, summary.UnitMicros, func(p *point) []float64 { return p.jit }))
		loss.Series = append(loss.Series, s(r.Label, false, summary.UnitPercent, func(p *point) []float64 { return p.loss }))
		cpu.Series = append(cpu.Series, s(r.Label+" sender", false, summary.UnitCores, func(p *point) []float64 { return p.snd }),
			s(r.Label+" receiver", true, summary.UnitCores, func(p *point) []float64 { return p.rcv }))
	}
	if len(tp.Series) == 0 {
		return nil
	}
	return []Chart{tp, delay, jitter, loss, cpu}
}

// averageCDF averages, at every stored fraction, the RTT of the given
// distributions (quantile averaging, as the RTT figure does).
func averageCDF(ls []*result.Latency) (x, y []float64) {
	var fr, sum []float64
	var n []int
	for _, l := range ls {
		if l == nil || len(l.CDF) == 0 {
			continue
		}
		if fr == nil {
			for _, q := range l.CDF {
				fr = append(fr, q.Fraction)
			}
			sum, n = make([]float64, len(fr)), make([]int, len(fr))
		}
		for _, q := range l.CDF {
			if j, ok := slices.BinarySearch(fr, q.Fraction); ok {
				sum[j] += q.RTT
				n[j]++
			}
		}
	}
	for j := range fr {
		if n[j] > 0 {
			x = append(x, summary.Round6(sum[j]/float64(n[j])))
			y = append(y, fr[j])
		}
	}
	return x, y
}

// latencyLoadChart: the latency_under_load test's RTT distributions, idle
// (solid) against loaded (dashed), one colour per method, for one
// parameter set.
func latencyLoadChart(runID string, ps paramSet, byKey map[string][]result.Cell) (Chart, bool) {
	p := ps.rows[0].Params
	c := Chart{
		ID: fmt.Sprintf("%s-rtt-load-%s", runID, ps.key.Slug()), Section: SectionLatencyLoad, Kind: KindLines,
		Title:  "RTT idle against loaded (" + describeAll(p) + ")",
		XLabel: "round-trip time (µs)", YLabel: "fraction of requests", LogX: true, AltScale: true,
	}
	load := ""
	for i, r := range ps.rows {
		var idle, loaded []*result.Latency
		for _, cell := range byKey[r.Key] {
			if l := cell.LatencyUnderLoad; l != nil {
				idle, loaded = append(idle, l.Idle), append(loaded, l.Loaded)
				load = l.Load
			}
		}
		ix, iy := averageCDF(idle)
		lx, ly := averageCDF(loaded)
		if len(ix) == 0 || len(lx) == 0 {
			continue
		}
		c.Series = append(c.Series, Series{Name: r.Label + " idle", Color: i, X: ix, Y: iy},
			Series{Name: r.Label + " loaded", Color: i, Dashed: true, X: lx, Y: ly})
	}
	if len(c.Series) == 0 {
		return Chart{}, false
	}
	c.Caption = fmt.Sprintf("Distribution of request/response round-trip times on the idle tunnel (solid) and while %s "+
		"saturates it (dashed); each curve averages the repetitions' quantiles. The x axis is logarithmic; a linear one is available.", summary.OrDash(load))
	return c, true
}
