package render

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// The seeds' own figures, in their shape, beside the report's other views
// of the same records: the methods of one condition side by side over
// time (seed 000, Figs. 2-4), sender and receiver CPU as grouped bars
// (Fig. 5), % of line rate and CPU as bars at the chosen process count
// (Fig. 15), throughput against MTU or MSS (seed 004) and seed 002's
// packet-size figures with one line per method (Figs. 4, 6 and 7).

// KindPanels draws one panel per Series.Panel, in order of first
// appearance, side by side on shared axes, with one legend for all.
const KindPanels = "panels"

// SectionMSS holds the figures against the TCP maximum segment size.
const SectionMSS = "mss"

// seedCharts is the figure generator of the seeds' figures, in report
// order, but for the line-rate bars, which come first in their section so
// that the CPU bars stand beside them (registered on their own).
func seedCharts(in chartInput) []Chart {
	var out []Chart
	for _, ps := range in.sets {
		if c, ok := methodsTimeChart(in.run.ID, ps, in.byKey); ok {
			out = append(out, c)
		}
	}
	for _, ps := range in.sets {
		if c, ok := cpuSidesChart(in.run.ID, ps); ok {
			out = append(out, c)
		}
	}
	out = append(out, sweepCharts(in.run.ID, in.rows, sweepMTU)...)
	out = append(out, sweepCharts(in.run.ID, in.rows, sweepMSS)...)
	for _, ps := range in.sets {
		out = append(out, udpSeedCharts(in.run.ID, ps, in.byKey)...)
	}
	return out
}

// methodsTimeChart: the throughput over time of every method of one
// parameter set in one figure, a panel per method on a shared y axis,
// each with its repetitions and their mean dashed (seed 000, Figs. 2-4,
// 7-9 and 16-18). Drawn when at least two methods have intervals.
func methodsTimeChart(runID string, ps paramSet, byKey map[string][]result.Cell) (Chart, bool) {
	p := ps.rows[0].Params
	c := Chart{
		ID:      fmt.Sprintf("%s-throughput-methods-%s", runID, ps.key.Slug()),
		Section: SectionThroughputTime,
		Kind:    KindPanels,
		// The same y axis as the per-method figures of the set.
		ShareY: fmt.Sprintf("%s-throughput-time-%s", runID, ps.key.Slug()),
		Title:  "Throughput over time by method (" + describeAll(p) + ")",
		Caption: fmt.Sprintf("%s per interval as the iperf3 client counted it, one panel per method on a shared y axis "+
			"(as seed 000's Figs. 2-4 lay them out): each repetition in its own colour, the mean over repetitions dashed.",
			intervalSide(p.Direction)),
		XLabel: "time (s)",
		YLabel: "throughput (Gbit/s)",
	}
	panels := 0
	for _, r := range ps.rows {
		one, ok := throughputTimeChart(runID, r, byKey[r.Key])
		if !ok {
			continue
		}
		panels++
		for _, s := range one.Series {
			s.Panel = r.Label
			c.Series = append(c.Series, s)
		}
	}
	if panels < 2 {
		return Chart{}, false
	}
	return c, true
}

// sidesSeries are a sender and a receiver bar series, side by side.
func sidesSeries(snd, rcv []summary.Figure) []Series {
	mk := func(name string, color int, fs []summary.Figure) Series {
		s := Series{Name: name, Color: color, Stack: name}
		for _, f := range fs {
			s.Y = append(s.Y, summary.Round6(f.Mean))
			s.YErr = append(s.YErr, summary.Round6(f.HalfWidth))
		}
		return s
	}
	return []Series{mk("sender", 0, snd), mk("receiver", 1, rcv)}
}

// cpuSidesChart: the sender's and the receiver's CPU per method as
// grouped bars, with their 95% confidence intervals (seed 000, Figs. 5,
// 13 and 22), for the rows of one parameter set that measured it.
func cpuSidesChart(runID string, ps paramSet) (Chart, bool) {
	var cats []string
	var snd, rcv []summary.Figure
	for _, r := range ps.rows {
		if r.SenderCPU.N == 0 && r.ReceiverCPU.N == 0 {
			continue
		}
		cats = append(cats, r.Label)
		snd, rcv = append(snd, r.SenderCPU), append(rcv, r.ReceiverCPU)
	}
	if len(cats) == 0 {
		return Chart{}, false
	}
	p := ps.rows[0].Params
	return Chart{
		ID:      fmt.Sprintf("%s-cpu-sides-%s", runID, ps.key.Slug()),
		Section: SectionCPU,
		Kind:    KindBars,
		Title:   "Sender and receiver CPU (" + describeAll(p) + ")",
		Caption: "CPU time per wall second (1.0 = one full core) of the sender's and of the receiver's processes " +
			"(load tool and tunnel daemon together) per method, side by side as seed 000's Fig. 5 has netperf's, " +
			"mean over repetitions; error bars are the 95% confidence interval.",
		XLabel: "method", YLabel: "CPU (cores)", Categories: cats,
		Series: sidesSeries(snd, rcv),
	}, true
}

// chosenProcesses is the process count the line-rate bars are drawn at:
// the one at which native's % of line rate peaks, or without native the
// mean over the methods (seed 000 added iperf3 processes until the line
// rate peaked).
func chosenProcesses(rs []summary.Summary) int {
	sum, n := map[int]float64{}, map[int]int{}
	native := slices.ContainsFunc(rs, func(r summary.Summary) bool { return r.Method == summary.NativeMethod })
	for _, r := range rs {
		if native && r.Method != summary.NativeMethod {
			continue
		}
		sum[r.Params.Streams] += r.Tests.PercentOfLineRate.Mean
		n[r.Params.Streams]++
	}
	best, bestV := 0, -1.0
	for _, k := range slices.Sorted(maps.Keys(n)) {
		if v := sum[k] / float64(n[k]); v > bestV {
			best, bestV = k, v
		}
	}
	return best
}

// lineRateBarCharts: % of line rate per method as bars at the chosen
// number of iperf3 processes (seed 000, Figs. 15a and 24a), and right
// after it the sender's and receiver's CPU at that count as grouped bars
// (15b, 24b), for every group of rows that differ only in the process
// count.
func lineRateBarCharts(runID string, rows []summary.Summary) []Chart {
	var order []summary.BaselineKey
	groups := map[summary.BaselineKey][]summary.Summary{}
	for _, r := range rows {
		if r.Params.StreamsPerProcess != 1 || r.Tests == nil || r.Tests.PercentOfLineRate.N == 0 {
			continue
		}
		k := summary.BaselineOf(r.Params)
		k.Streams = 0
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Chart
	for _, k := range order {
		rs := groups[k]
		n := chosenProcesses(rs)
		p := rs[0].Params
		var cats []string
		var pct, snd, rcv []summary.Figure
		for _, r := range rs {
			if r.Params.Streams != n {
				continue
			}
			cats = append(cats, r.Label)
			pct = append(pct, r.Tests.PercentOfLineRate)
			snd, rcv = append(snd, r.Tests.ParallelSenderCPU), append(rcv, r.Tests.ParallelReceiverCPU)
		}
		at := fmt.Sprintf("at %d iperf3 processes", n)
		slug := fmt.Sprintf("%s-n%d", summary.GroupSlug(p), n)
		bars := Chart{
			ID: fmt.Sprintf("%s-line-rate-bars-%s", runID, slug), Section: SectionLineRate, Kind: KindBars,
			Title: "% of line rate " + at + " (" + groupDesc(p) + ")",
			Caption: fmt.Sprintf("Throughput as a percentage of the underlay's line rate per method with %d iperf3 processes "+
				"of one stream each, the count at which %s peaks (seed 000, Fig. 15a), mean over repetitions; error bars are "+
				"the 95%% confidence interval.", n, peakOf(rs)),
			XLabel: "method", YLabel: "% of line rate", Categories: cats,
		}
		s := Series{Name: "% of line rate", Color: 0, Stack: "line rate"}
		for _, f := range pct {
			s.Y, s.YErr = append(s.Y, summary.Round6(f.Mean)), append(s.YErr, summary.Round6(f.HalfWidth))
		}
		bars.Series = []Series{s}
		out = append(out, bars)
		if slices.ContainsFunc(snd, func(f summary.Figure) bool { return f.N > 0 }) || slices.ContainsFunc(rcv, func(f summary.Figure) bool { return f.N > 0 }) {
			out = append(out, Chart{
				ID: fmt.Sprintf("%s-line-rate-cpu-bars-%s", runID, slug), Section: SectionLineRate, Kind: KindBars,
				Title: "CPU " + at + " (" + groupDesc(p) + ")",
				Caption: fmt.Sprintf("CPU time per wall second (1.0 = one full core) of the sender's and the receiver's processes "+
					"with %d iperf3 processes of one stream each (seed 000, Fig. 15b), mean over repetitions; error bars are "+
					"the 95%% confidence interval.", n),
				XLabel: "method", YLabel: "CPU (cores)", Categories: cats,
				Series: sidesSeries(snd, rcv),
			})
		}
	}
	return out
}

// peakOf names whose % of line rate chose the process count.
func peakOf(rs []summary.Summary) string {
	if slices.ContainsFunc(rs, func(r summary.Summary) bool { return r.Method == summary.NativeMethod }) {
		return "native's % of line rate"
	}
	return "the methods' mean % of line rate"
}

// sweep is a parameter that throughput is drawn against, one line per
// method.
type sweep struct {
	name, section, title, xlabel string
	// value is the parameter's value, 0 when the row does not set it.
	value func(result.Params) int
	clear func(*summary.BaselineKey)
	// desc names every other parameter of a group.
	desc func(result.Params) string
}

var (
	sweepMTU = sweep{
		name: "mtu-lines", section: SectionMTU, title: "Throughput against underlay MTU", xlabel: "underlay MTU (bytes)",
		value: func(p result.Params) int { return p.UnderlayMTU },
		clear: func(k *summary.BaselineKey) { k.UnderlayMTU = 0 },
		desc: func(p result.Params) string {
			return fmt.Sprintf("%s, offloads %s, %s", p.Family, offloadsName(p), summary.Streams(p.Streams)) + ccSuffix(p) + restSuffix(p)
		},
	}
	sweepMSS = sweep{
		name: "mss-lines", section: SectionMSS, title: "Throughput against TCP MSS", xlabel: "TCP MSS (bytes)",
		value: func(p result.Params) int { return p.MSS },
		clear: func(k *summary.BaselineKey) { k.MSS = 0 },
		desc: func(p result.Params) string {
			p.MSS = 0
			return describeAll(p)
		},
	}
)

// sweepCharts: receiver throughput against the swept parameter, one line
// per method with its 95% confidence interval (seed 004's graph), for
// every group of rows that differ only in it and have at least two of its
// values.
func sweepCharts(runID string, rows []summary.Summary, sw sweep) []Chart {
	var order []summary.BaselineKey
	groups := map[summary.BaselineKey][]summary.Summary{}
	for _, r := range rows {
		if sw.value(r.Params) == 0 || r.Throughput.N == 0 {
			continue
		}
		k := summary.BaselineOf(r.Params)
		sw.clear(&k)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Chart
	for _, k := range order {
		rs := groups[k]
		values := map[int]bool{}
		for _, r := range rs {
			values[sw.value(r.Params)] = true
		}
		if len(values) < 2 {
			continue
		}
		p := rs[0].Params
		slug := strings.Replace(k.Slug(), "-mtu0-", "-", 1)
		c := Chart{
			ID: fmt.Sprintf("%s-%s-%s", runID, sw.name, slug), Section: sw.section, Kind: KindLines,
			Title: sw.title + " (" + sw.desc(p) + ")",
			Caption: "Receiver throughput per method, mean over repetitions with its 95% confidence interval, " +
				"one line per method (seed 004's graph); the x axis is logarithmic, with a tick at every value measured.",
			XLabel: sw.xlabel, YLabel: "throughput (Gbit/s)", LogX: true,
		}
		var labels []string
		mine := map[string][]summary.Summary{}
		for _, r := range rs {
			if _, ok := mine[r.Label]; !ok {
				labels = append(labels, r.Label)
			}
			mine[r.Label] = append(mine[r.Label], r)
		}
		for i, l := range labels {
			slices.SortFunc(mine[l], func(a, b summary.Summary) int { return cmp.Compare(sw.value(a.Params), sw.value(b.Params)) })
			s := Series{Name: l, Color: i}
			for _, r := range mine[l] {
				addPoint(&s, float64(sw.value(r.Params)), r.Throughput)
			}
			c.Series = append(c.Series, s)
		}
		out = append(out, c)
	}
	return out
}

// udpSeedCharts: seed 002's packet-size figures that need one line per
// method where the other UDP figures draw two: the mean one-way delay
// (Fig. 4), the sender's CPU (Fig. 6) and the receiver's (Fig. 7).
func udpSeedCharts(runID string, ps paramSet, byKey map[string][]result.Cell) []Chart {
	p := ps.rows[0].Params
	const each = " One line per method, mean over repetitions with its 95% confidence interval; x is the Ethernet frame size of the inner packet."
	specs := []struct {
		name, title, ylabel, unit, caption string
		get                                func(result.UDPTrial) (float64, bool)
	}{
		{"delay-mean", "UDP mean one-way delay", "mean one-way delay (µs)", summary.UnitMicros,
			"Mean one-way delay over every datagram received (seed 002, Fig. 4; exact on the local testbed, where both ends share one clock)." + each,
			func(t result.UDPTrial) (float64, bool) { return t.DelayMean, t.DelayKnown() && t.DelayMean != 0 }},
		{"sender-cpu", "UDP sender CPU", "sender CPU (cores)", summary.UnitCores,
			"CPU time per wall second (1.0 = one full core) of the sending side (seed 002, Fig. 6)." + each,
			func(t result.UDPTrial) (float64, bool) { return t.SenderCores, true }},
		{"receiver-cpu", "UDP receiver CPU", "receiver CPU (cores)", summary.UnitCores,
			"CPU time per wall second (1.0 = one full core) of the receiving side (seed 002, Fig. 7)." + each,
			func(t result.UDPTrial) (float64, bool) { return t.ReceiverCores, true }},
	}
	var out []Chart
	for _, sp := range specs {
		c := Chart{
			ID: fmt.Sprintf("%s-udp-%s-%s", runID, sp.name, ps.key.Slug()), Section: SectionUDPSizes, Kind: KindLines,
			Title: sp.title + " (" + describeAll(p) + ")", Caption: sp.caption,
			XLabel: "frame size (bytes)", YLabel: sp.ylabel,
		}
		for i, r := range ps.rows {
			at := map[int][]float64{}
			for _, cell := range byKey[r.Key] {
				for _, u := range cell.UDPSizes {
					if u.Result == nil || u.Error != "" {
						continue
					}
					if v, ok := sp.get(*u.Result); ok {
						at[u.FrameBytes] = append(at[u.FrameBytes], v)
					}
				}
			}
			if len(at) == 0 {
				continue
			}
			s := Series{Name: r.Label, Color: i}
			for _, frame := range slices.Sorted(maps.Keys(at)) {
				addPoint(&s, float64(frame), summary.FigureOf(sp.unit, at[frame]))
			}
			c.Series = append(c.Series, s)
		}
		if len(c.Series) > 0 {
			out = append(out, c)
		}
	}
	return out
}
