package render

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
)

// Figures and take-aways of the tunnels dimension (issue 41,
// docs/scale.md): throughput, set-up time and memory per tunnel against
// the number of tunnels, log x, one line per method with its 95%
// confidence interval (the seeds' line figures, as the streams figures
// draw them), and the reconf test's effective blocked time per method.

// SectionTunnels holds the tunnels dimension's figures.
const SectionTunnels = "tunnels"

// tunnelGroup is the rows of one parameter set but the tunnel count, per
// method label in order of first appearance, each sorted by count.
type tunnelGroup struct {
	key    summary.BaselineKey
	labels []string
	rows   map[string][]summary.Summary
	counts int // distinct tunnel counts
}

// tunnelN is a row's tunnel count, at least 1.
func tunnelN(p result.Params) int { return max(p.Tunnels, 1) }

// tunnelGroups groups rows by every parameter but the tunnel count.
func tunnelGroups(rows []summary.Summary) []tunnelGroup {
	var out []tunnelGroup
	idx := map[summary.BaselineKey]int{}
	counts := map[summary.BaselineKey]map[int]bool{}
	for _, r := range rows {
		k := summary.NativeKey(r.Params)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, tunnelGroup{key: k, rows: map[string][]summary.Summary{}})
			counts[k] = map[int]bool{}
		}
		g := &out[i]
		if _, ok := g.rows[r.Label]; !ok {
			g.labels = append(g.labels, r.Label)
		}
		g.rows[r.Label] = append(g.rows[r.Label], r)
		counts[k][tunnelN(r.Params)] = true
	}
	for i := range out {
		out[i].counts = len(counts[out[i].key])
		for _, l := range out[i].labels {
			slices.SortStableFunc(out[i].rows[l], func(a, b summary.Summary) int { return cmp.Compare(tunnelN(a.Params), tunnelN(b.Params)) })
		}
	}
	return out
}

// groupParams are the parameters of a group's first row at one tunnel,
// for titles.
func (g tunnelGroup) groupParams() result.Params {
	p := g.rows[g.labels[0]][0].Params
	p.Tunnels = 0
	return p
}

// units says what one tunnel is per method, from the scale records:
// "vxlan: VXLAN device, wireguard-go: peer".
func (g tunnelGroup) units() string {
	var out []string
	for _, l := range g.labels {
		for _, r := range g.rows[l] {
			if r.Scale != nil && r.Scale.Unit != "" {
				out = append(out, l+": "+r.Scale.Unit)
				break
			}
		}
	}
	return strings.Join(out, ", ")
}

// tunnelsCharts: per group of rows that differ only in the tunnel count
// and have at least two counts, throughput, set-up time and memory per
// tunnel against the count; and, wherever the reconf test ran, its
// blocked time per method.
func tunnelsCharts(runID string, rows []summary.Summary) []Chart {
	var out []Chart
	for _, g := range tunnelGroups(rows) {
		p := g.groupParams()
		desc, slug := describeAll(p), g.key.Slug()
		if g.counts >= 2 {
			unit := ""
			if u := g.units(); u != "" {
				unit = " One tunnel is, per method, " + u + "."
			}
			tp := Chart{
				ID: fmt.Sprintf("%s-tunnels-throughput-%s", runID, slug), Section: SectionTunnels, Kind: KindLines,
				Title: "Throughput against tunnels (" + desc + ")",
				Caption: "Receiver throughput across one of the N tunnels (the middle one, so that its lookup is neither the first " +
					"nor the last), mean over repetitions with its 95% confidence interval, one line per method; native, which " +
					"sets up no tunnel, is its one point at N = 1. The x axis is logarithmic." + unit,
				XLabel: "tunnels", YLabel: "throughput (Gbit/s)", LogX: true,
			}
			setup := Chart{
				ID: fmt.Sprintf("%s-tunnels-setup-%s", runID, slug), Section: SectionTunnels, Kind: KindLines,
				Title: "Set-up time against tunnels (" + desc + ")",
				Caption: "The method's whole set-up of the N tunnels on both sides, mean over repetitions (each set them up " +
					"afresh) with its 95% confidence interval, one line per method; the x axis is logarithmic." + unit,
				XLabel: "tunnels", YLabel: "set-up (s)", LogX: true,
			}
			mem := Chart{
				ID: fmt.Sprintf("%s-tunnels-memory-%s", runID, slug), Section: SectionTunnels, Kind: KindLines,
				Title: "Memory per tunnel against tunnels (" + desc + ")",
				Caption: "The kernel slab's growth over the set-up plus the method's daemons' resident memory, divided by N, " +
					"mean over repetitions with its 95% confidence interval (noisy on a shared host: the slab moves with " +
					"everything the kernel does); the x axis is logarithmic." + unit,
				XLabel: "tunnels", YLabel: "memory per tunnel (KiB)", LogX: true,
			}
			shared := false
			for i, l := range g.labels {
				ts, ss, ms := Series{Name: l, Color: i}, Series{Name: l, Color: i}, Series{Name: l, Color: i}
				for _, r := range g.rows[l] {
					x := float64(tunnelN(r.Params))
					addPoint(&ts, x, r.Throughput)
					if s := r.Scale; s != nil {
						addPoint(&ss, x, s.Setup)
						kib := s.PerTunnel
						kib.Mean, kib.HalfWidth = kib.Mean/1024, kib.HalfWidth/1024
						addPoint(&ms, x, kib)
						shared = shared || (s.SharedKernel && s.PerTunnel.N > 0)
					}
				}
				for _, a := range []struct {
					c *Chart
					s Series
				}{{&tp, ts}, {&setup, ss}, {&mem, ms}} {
					if len(a.s.X) > 0 {
						a.c.Series = append(a.c.Series, a.s)
					}
				}
			}
			if shared {
				mem.Caption += " Shared kernel: " + summary.SharedKernelNote + "."
			}
			for _, c := range []Chart{tp, setup, mem} {
				if len(c.Series) > 0 && (c.ID == tp.ID || tunnelCounts(c) >= 2) {
					out = append(out, c)
				}
			}
		}
		if c, ok := reconfChart(runID, g, desc, slug); ok {
			out = append(out, c)
		}
	}
	return out
}

// tunnelCounts is the number of distinct x values of a chart's series.
func tunnelCounts(c Chart) int {
	xs := map[float64]bool{}
	for _, s := range c.Series {
		for _, x := range s.X {
			xs[x] = true
		}
	}
	return len(xs)
}

// reconfChart: the reconf test's effective blocked time per method, one
// bar per tunnel count it ran at, with the 95% confidence interval.
func reconfChart(runID string, g tunnelGroup, desc, slug string) (Chart, bool) {
	var cats []string
	var counts []int
	for _, l := range g.labels {
		for _, r := range g.rows[l] {
			if r.Scale == nil || r.Scale.ReconfBlocked.N == 0 {
				continue
			}
			if !slices.Contains(cats, l) {
				cats = append(cats, l)
			}
			if n := tunnelN(r.Params); !slices.Contains(counts, n) {
				counts = append(counts, n)
			}
		}
	}
	if len(cats) == 0 {
		return Chart{}, false
	}
	slices.Sort(counts)
	c := Chart{
		ID: fmt.Sprintf("%s-reconf-%s", runID, slug), Section: SectionTunnels, Kind: KindBars,
		Title: "Reconf: blocked time adding one more tunnel (" + desc + ")",
		Caption: "While a request stream and a TCP stream cross the measured tunnel, the method adds one more: the effective " +
			"blocked time (requests lost times the request interval, FD.io CSIT's measure) per method, one bar per number " +
			"of tunnels already set up, mean over repetitions with its 95% confidence interval.",
		XLabel: "method", YLabel: "blocked time (ms)", Categories: cats,
	}
	for i, n := range counts {
		s := Series{Name: summary.Tunnels(n), Color: i, Stack: summary.Tunnels(n), Y: make([]float64, len(cats)), YErr: make([]float64, len(cats))}
		for j, l := range cats {
			for _, r := range g.rows[l] {
				if tunnelN(r.Params) == n && r.Scale != nil && r.Scale.ReconfBlocked.N > 0 {
					f := msFigure(r.Scale.ReconfBlocked)
					s.Y[j], s.YErr[j] = summary.Round6(f.Mean), summary.Round6(f.HalfWidth)
				}
			}
		}
		c.Series = append(c.Series, s)
	}
	return c, true
}

// plural names n of a unit: "1 peer", "100 peers", "10,000 VXLAN
// devices".
func plural(n int, unit string) string {
	if unit == "" {
		unit = "tunnel"
	}
	if n == 1 {
		return "1 " + unit
	}
	return thousands(n) + " " + unit + "s"
}

// thousands writes n with a comma every three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// scaleClaims: per method and group of rows that differ only in the
// tunnel count, how its set-up grows with N (the slope of a least-squares
// line through log set-up against log N over every repetition, with its
// 95% interval: linear when the interval holds 1) and its throughput at
// the largest N against the smallest (Welch's t-test).
func scaleClaims(tc claimCtx, cells []result.Cell) {
	byKey := map[string][]result.Cell{}
	for _, c := range cells {
		if c.Status == result.StatusOK {
			byKey[summary.CellKey(c)] = append(byKey[summary.CellKey(c)], c)
		}
	}
	for _, g := range tunnelGroups(tc.rows) {
		if g.counts < 2 {
			continue
		}
		v := tc.v
		v.Tunnels = false
		desc := at(describe(g.groupParams(), v))
		slug := g.key.Slug()
		for _, l := range g.labels {
			rs := g.rows[l]
			if len(rs) < 2 {
				continue
			}
			unit := ""
			for _, r := range rs {
				if r.Scale != nil && r.Scale.Unit != "" {
					unit = r.Scale.Unit
				}
			}
			setupClaim(tc, rs, byKey, unit, desc, tc.link(fmt.Sprintf("%s-tunnels-setup-%s", tc.runID, slug)))
			lo, hi := rs[0], rs[len(rs)-1]
			if !goodThroughput(lo) || !goodThroughput(hi) {
				continue
			}
			nlo, nhi := tunnelN(lo.Params), tunnelN(hi.Params)
			fig := tc.link(fmt.Sprintf("%s-tunnels-throughput-%s", tc.runID, slug))
			both := fmt.Sprintf("(%s against %s Gbit/s)", withCI(hi.Throughput), withCI(lo.Throughput))
			if overlap(lo.Throughput, hi.Throughput) {
				tc.add(fmt.Sprintf("%s's throughput at %s is indistinguishable from %s%s: Welch's t-test finds no difference at %s confidence %s.",
					l, plural(nhi, unit), plural(nlo, unit), desc, pctText(100*ClaimConfidence), both), fig, lo, hi)
				continue
			}
			change := 100 * (hi.Throughput.Mean/lo.Throughput.Mean - 1)
			dir := "lower"
			if change > 0 {
				dir = "higher"
			}
			tc.add(evidence(fmt.Sprintf("%s's throughput at %s is %s %s than at %s%s %s.",
				l, plural(nhi, unit), pctText(max(change, -change)), dir, plural(nlo, unit), desc, both), lo.Throughput, hi.Throughput), fig, lo, hi)
		}
	}
}

// setupClaim says how one method's set-up grows with the tunnel count,
// from every usable repetition's set-up time.
func setupClaim(tc claimCtx, rs []summary.Summary, byKey map[string][]result.Cell, unit, desc, fig string) {
	var xs, ys []float64
	var basis []summary.Summary
	for _, r := range rs {
		if ok, _ := usable(r); !ok || r.Scale == nil || r.Scale.Setup.N == 0 {
			continue
		}
		basis = append(basis, r)
		for _, c := range byKey[r.Key] {
			if c.Scale != nil {
				xs, ys = append(xs, float64(tunnelN(c.Params))), append(ys, c.Scale.Setup)
			}
		}
	}
	s, ok := stats.LogLogSlope(xs, ys)
	if !ok || len(basis) < 2 {
		return
	}
	top := basis[len(basis)-1]
	n0, n1 := tunnelN(basis[0].Params), tunnelN(top.Params)
	var how string
	switch lo, hi := s.Slope-s.HalfWidth, s.Slope+s.HalfWidth; {
	case hi-lo > 1:
		how = "grows, at a rate the repetitions cannot tell,"
	case lo > 1:
		how = "grows faster than linearly"
	case hi < 1:
		how = "grows sublinearly"
	default:
		how = "grows linearly"
	}
	name := top.Label
	tc.add(fmt.Sprintf("%s's set-up %s to %s s at %s%s (log-log slope %s ± %s over %s to %s, %d repetitions; 1 is linear).",
		name, how, withCI(top.Scale.Setup), plural(n1, unit), desc, strconv.FormatFloat(s.Slope, 'f', 2, 64),
		strconv.FormatFloat(s.HalfWidth, 'f', 2, 64), thousands(n0), plural(n1, unit), s.N), fig, basis...)
}
