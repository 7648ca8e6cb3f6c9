package render

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/scenario"
)

// Take-aways of the tests beyond tcp_stream and tcp_rr: the parallel
// test, the line rate, udp_sizes. Like the others, each rests only on
// usable rows and figures with an interval, and says "indistinguishable"
// where Welch's t-test finds no difference (overlap).

// claimCtx is what every take-away generator shares.
type claimCtx struct {
	runID string
	rows  []summary.Summary
	v     summary.Varying
	link  func(...string) string
	add   func(text, fig string, basis ...summary.Summary)
}

// goodFigure says whether a row and one of its figures may carry a claim.
func goodFigure(r summary.Summary, f summary.Figure) bool {
	ok, _ := usable(r)
	return ok && stable(f)
}

// LineRateTarget is the share of the line rate the line-rate take-away
// asks each method to reach, in percent.
const LineRateTarget = 90.0

// parallelClaims: per group of parallel-test rows that differ only in
// streams, each method's peak aggregate and the stream count from which
// more streams gain nothing distinguishable, with its share of native's
// peak; with one stream count, each method's share of native's aggregate.
func parallelClaims(c claimCtx) {
	has := func(r summary.Summary) bool { return r.Tests != nil && r.Tests.Parallel.N > 0 }
	grouped := map[string]bool{}
	for _, rs := range streamsGroups(c.rows, has) {
		p := rs[0].Params
		fig := c.link(fmt.Sprintf("%s-parallel-throughput-%s-spp%d", c.runID, summary.GroupSlug(p), p.StreamsPerProcess))
		perProcess := fmt.Sprintf("%d streams per process", p.StreamsPerProcess)
		if p.StreamsPerProcess == 1 {
			perProcess = "one iperf3 process per stream"
		}
		desc := fmt.Sprintf(" (%s, %s)", groupDesc(p), perProcess)
		labels, mine := byLabel(rs)
		type peak struct {
			r  summary.Summary
			ok bool
		}
		peakOf := func(l string) peak {
			ms := mine[l]
			if len(ms) == 0 {
				return peak{} // no such method in the group (native, for one)
			}
			for _, r := range ms {
				if !goodFigure(r, r.Tests.Parallel) {
					return peak{}
				}
			}
			best := ms[0]
			for _, r := range ms[1:] {
				if r.Tests.Parallel.Mean > best.Tests.Parallel.Mean {
					best = r
				}
			}
			return peak{best, true}
		}
		native := peakOf(summary.NativeMethod)
		for _, l := range labels {
			for _, r := range mine[l] {
				grouped[r.Key] = true
			}
			pk := peakOf(l)
			if !pk.ok {
				continue
			}
			ms := mine[l]
			// Scaling stops at the smallest count from which every count
			// up to the peak's is indistinguishable from the peak.
			top := slices.IndexFunc(ms, func(r summary.Summary) bool { return r.Key == pk.r.Key })
			stop := top
			for i := top - 1; i >= 0 && overlap(ms[i].Tests.Parallel, pk.r.Tests.Parallel); i-- {
				stop = i
			}
			at := ms[stop]
			var scaling string
			switch {
			case stop == 0:
				scaling = fmt.Sprintf("more streams than %d gain nothing distinguishable", at.Params.Streams)
			case stop == len(ms)-1:
				scaling = fmt.Sprintf("it still scales at the largest count, %d streams", at.Params.Streams)
			default:
				scaling = fmt.Sprintf("it stops scaling at %d streams (from there to the peak, every count is indistinguishable from the peak, and no larger count carries more)", at.Params.Streams)
			}
			text := fmt.Sprintf("In the parallel test%s, %s peaks at %s Gbit/s with %s; %s.",
				desc, l, withCI(pk.r.Tests.Parallel), summary.Streams(pk.r.Params.Streams), scaling)
			basis := slices.Clone(ms)
			if l != summary.NativeMethod && native.ok {
				n := native.r
				share := fmt.Sprintf(" That is %s of native's peak (%s Gbit/s with %s).",
					pctText(100*pk.r.Tests.Parallel.Mean/n.Tests.Parallel.Mean), withCI(n.Tests.Parallel), summary.Streams(n.Params.Streams))
				if overlap(pk.r.Tests.Parallel, n.Tests.Parallel) {
					share = fmt.Sprintf(" Its peak and native's (%s Gbit/s with %s) are indistinguishable.",
						withCI(n.Tests.Parallel), summary.Streams(n.Params.Streams))
				} else {
					share = evidence(share, pk.r.Tests.Parallel, n.Tests.Parallel)
				}
				text += share
				basis = append(basis, mine[summary.NativeMethod]...)
			}
			c.add(text, fig, basis...)
		}
	}
	// One stream count: the share of native's aggregate.
	for _, ps := range paramSets(c.rows) {
		var native summary.Summary
		found := false
		for _, r := range ps.rows {
			if r.Method == summary.NativeMethod && has(r) && !grouped[r.Key] {
				native, found = r, true
				break
			}
		}
		if !found || !goodFigure(native, native.Tests.Parallel) {
			continue
		}
		desc := at(describe(native.Params, c.v))
		for _, r := range ps.rows {
			if r.Method == summary.NativeMethod || !has(r) || grouped[r.Key] || !goodFigure(r, r.Tests.Parallel) {
				continue
			}
			what := fmt.Sprintf("%s over %d iperf3 processes", summary.Streams(r.Params.Streams), r.Tests.Processes)
			if overlap(r.Tests.Parallel, native.Tests.Parallel) {
				c.add(fmt.Sprintf("In the parallel test with %s%s, %s and native are indistinguishable in aggregate throughput (%s against %s Gbit/s).",
					what, desc, r.Label, withCI(r.Tests.Parallel), withCI(native.Tests.Parallel)), c.link(), r, native)
				continue
			}
			c.add(evidence(fmt.Sprintf("In the parallel test with %s%s, %s carries %s of native's aggregate throughput (%s against %s Gbit/s).",
				what, desc, r.Label, pctText(100*r.Tests.Parallel.Mean/native.Tests.Parallel.Mean),
				withCI(r.Tests.Parallel), withCI(native.Tests.Parallel)), r.Tests.Parallel, native.Tests.Parallel), c.link(), r, native)
		}
	}
}

// lineRateClaims: per group of one-stream-per-process rows with a known
// line rate, how many iperf3 processes each method needs to reach
// LineRateTarget % of the line rate, or the best it reached.
func lineRateClaims(c claimCtx) {
	keep := func(r summary.Summary) bool {
		return r.Params.StreamsPerProcess == 1 && r.Tests != nil && r.Tests.PercentOfLineRate.N > 0
	}
	for _, rs := range streamsGroups(c.rows, keep) {
		p := rs[0].Params
		fig := c.link(fmt.Sprintf("%s-line-rate-%s", c.runID, summary.GroupSlug(p)))
		desc := " (" + groupDesc(p) + ")"
		labels, mine := byLabel(rs)
		for _, l := range labels {
			ms := mine[l]
			if slices.ContainsFunc(ms, func(r summary.Summary) bool { return !goodFigure(r, r.Tests.PercentOfLineRate) }) {
				continue
			}
			i := slices.IndexFunc(ms, func(r summary.Summary) bool { return r.Tests.PercentOfLineRate.Mean >= LineRateTarget })
			if i >= 0 {
				r := ms[i]
				c.add(fmt.Sprintf("%s needs %d iperf3 processes of one stream each to reach %s of the line rate%s: %s%% with %d.",
					l, r.Params.Streams, pctText(LineRateTarget), desc, withCI(r.Tests.PercentOfLineRate), r.Params.Streams), fig, ms[:i+1]...)
				continue
			}
			best := ms[0]
			for _, r := range ms[1:] {
				if r.Tests.PercentOfLineRate.Mean > best.Tests.PercentOfLineRate.Mean {
					best = r
				}
			}
			c.add(fmt.Sprintf("%s does not reach %s of the line rate with up to %d iperf3 processes%s: at best %s%% with %d.",
				l, pctText(LineRateTarget), ms[len(ms)-1].Params.Streams, desc, withCI(best.Tests.PercentOfLineRate), best.Params.Streams), fig, ms...)
		}
	}
}

// kpps formats a packet rate in thousands of packets per second.
func kpps(f summary.Figure) string {
	g := f
	g.Mean, g.HalfWidth = f.Mean/1000, f.HalfWidth/1000
	return withCI(g)
}

// udpClaims: per parameter set of the udp_sizes test, each method's
// packet rate at the smallest frame (against native's), its no-drop and
// partial-drop rates where the search ran, and the frame size where it
// loses most against native.
func udpClaims(c claimCtx) {
	for _, ps := range paramSets(c.rows) {
		var native *summary.Summary
		for i, r := range ps.rows {
			if r.Method == summary.NativeMethod && r.Tests != nil && len(r.Tests.UDP) > 0 {
				native = &ps.rows[i]
				break
			}
		}
		fig := c.link(fmt.Sprintf("%s-udp-throughput-%s", c.runID, ps.key.Slug()))
		desc := at(describe(ps.rows[0].Params, c.v))
		nativeAt := func(frame int) (summary.UDPSizeSummary, bool) {
			if native == nil {
				return summary.UDPSizeSummary{}, false
			}
			i := slices.IndexFunc(native.Tests.UDP, func(u summary.UDPSizeSummary) bool { return u.FrameBytes == frame })
			if i < 0 {
				return summary.UDPSizeSummary{}, false
			}
			return native.Tests.UDP[i], true
		}
		for _, r := range ps.rows {
			if r.Tests == nil || len(r.Tests.UDP) == 0 {
				continue
			}
			if ok, _ := usable(r); !ok {
				continue
			}
			us := slices.Clone(r.Tests.UDP)
			slices.SortFunc(us, func(a, b summary.UDPSizeSummary) int { return a.FrameBytes - b.FrameBytes })
			small := us[0]
			// Packets per second at the smallest frame.
			if stable(small.PacketsPerSecond) {
				text := fmt.Sprintf("At %d-byte frames%s, %s forwards %s kpackets/s", small.FrameBytes, desc, r.Label, kpps(small.PacketsPerSecond))
				basis := []summary.Summary{r}
				if n, ok := nativeAt(small.FrameBytes); ok && r.Method != summary.NativeMethod && goodFigure(*native, n.PacketsPerSecond) {
					basis = append(basis, *native)
					if overlap(small.PacketsPerSecond, n.PacketsPerSecond) {
						text += fmt.Sprintf(", indistinguishable from native's %s kpackets/s", kpps(n.PacketsPerSecond))
					} else {
						text += fmt.Sprintf(", %s of native's %s kpackets/s", pctText(100*small.PacketsPerSecond.Mean/n.PacketsPerSecond.Mean), kpps(n.PacketsPerSecond))
					}
				}
				c.add(text+".", fig, basis...)
			}
			// NDR and PDR at the smallest frame the search ran at.
			if i := slices.IndexFunc(us, func(u summary.UDPSizeSummary) bool { return u.NDRGbps.N > 0 }); i >= 0 {
				u := us[i]
				if stable(u.NDRGbps) && stable(u.PDRGbps) && u.PayloadBytes > 0 {
					pkts := func(f summary.Figure) string {
						return strconv.FormatFloat(f.Mean*1e9/float64(8*u.PayloadBytes)/1000, 'f', 0, 64)
					}
					c.add(fmt.Sprintf("At %d-byte frames%s, %s's no-drop rate is %s Gbit/s (about %s kpackets/s) and its %s-drop rate %s Gbit/s (about %s kpackets/s).",
						u.FrameBytes, desc, r.Label, withCI(u.NDRGbps), pkts(u.NDRGbps), pdrLoss, withCI(u.PDRGbps), pkts(u.PDRGbps)), fig, r)
				}
			}
			// The frame size where the method loses most against native.
			if r.Method == summary.NativeMethod || native == nil || len(us) < 2 {
				continue
			}
			worst, found := summary.UDPSizeSummary{}, false
			var worstNative summary.UDPSizeSummary
			all := true
			for _, u := range us {
				n, ok := nativeAt(u.FrameBytes)
				if !ok || u.PercentNative == nil {
					continue
				}
				if !stable(u.Gbps) || !goodFigure(*native, n.Gbps) {
					all = false
					break
				}
				if !found || *u.PercentNative < *worst.PercentNative {
					worst, worstNative, found = u, n, true
				}
			}
			if !all || !found {
				continue
			}
			if overlap(worst.Gbps, worstNative.Gbps) {
				c.add(fmt.Sprintf("%s and native are indistinguishable in UDP throughput at every frame size measured%s.", r.Label, desc), fig, r, *native)
				continue
			}
			c.add(fmt.Sprintf("%s loses most against native at %d-byte frames%s: %s of native's UDP throughput (%s against %s Gbit/s).",
				r.Label, worst.FrameBytes, desc, pctText(*worst.PercentNative), withCI3(worst.Gbps), withCI3(worstNative.Gbps)), fig, r, *native)
		}
	}
}

// pdrLoss names the partial-drop rate's loss bound.
var pdrLoss = strconv.FormatFloat(scenario.PDRLossPercent, 'f', -1, 64) + "%"

// withCI3 is withCI for small rates: three decimals below 1.
func withCI3(f summary.Figure) string {
	if f.Mean >= 1 {
		return withCI(f)
	}
	return strconv.FormatFloat(f.Mean, 'f', 3, 64) + " ± " + strconv.FormatFloat(f.HalfWidth, 'f', 3, 64)
}
