package render

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/report/compare"
	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// TakeAway is one sentence generated from the data, in the style of the
// seed report's take-away lists. It says only what the figures support: it
// rests only on rows that had a quiet background before every repetition,
// ran on real hardware and have at least two ok repetitions. Whether two
// figures differ is Welch's t-test at 95% confidence over the run's
// repetitions, whatever their coefficient of variation: a large
// difference is certain even on a noisy VM. A sentence that finds a
// difference gives the test's p-value (how sure it is) and marks an
// unstable figure (CV above 10%) with its CV; where the test finds none,
// it says the two are indistinguishable.
type TakeAway struct {
	Text string `json:"text"`
	// Figure is the id of the figure (or table) that shows the data.
	Figure string `json:"figure"`
	// Basis are the keys of the rows the sentence rests on.
	Basis []string `json:"basis"`
}

// TakeAways are the sentences of a run, and the rows no sentence may rest
// on, each with the reason.
type TakeAways struct {
	Claims   []TakeAway `json:"claims"`
	Withheld []string   `json:"withheld"`
}

// SummaryAnchor is the HTML id of a run's summary table.
func SummaryAnchor(runID string) string { return runID + "-summary" }

// usable says whether a row may be the basis of any claim, and if not,
// why. A usable row's figures may still be unstable one by one: see
// stable.
func usable(r summary.Summary) (bool, string) {
	switch {
	case r.Emulated:
		return false, "it ran in a software-emulated VM, which measures function, not performance"
	case r.BackgroundBusy:
		return false, fmt.Sprintf("the background was busy (up to %.0f%% of the machine) before a repetition", r.BackgroundBusyMax)
	case r.OK < 2:
		return false, "it has fewer than two ok repetitions, so no confidence interval"
	}
	return true, ""
}

// stable says whether a figure may be the basis of a claim: it has a
// confidence interval, so Welch's test applies. An unstable figure (CV
// above 10%) may still carry one; the sentence marks it (withCI).
func stable(f summary.Figure) bool { return f.HasCI }

// ClaimConfidence is the confidence level at which a take-away calls two
// figures different (Welch's t-test, two-sided).
const ClaimConfidence = 0.95

// welch is the two-sided p-value of Welch's t-test between two figures
// (each with at least two repetitions).
func welch(a, b summary.Figure) float64 {
	return compare.WelchP(a.Mean, a.StdDev, a.N, b.Mean, b.StdDev, b.N)
}

// claimFigures are the figures take-aways are made of, with their names.
var claimFigures = []struct {
	name string
	get  func(summary.Summary) summary.Figure
}{
	{"throughput", func(s summary.Summary) summary.Figure { return s.Throughput }},
	{"Gbit/s per core", func(s summary.Summary) summary.Figure { return s.GbpsPerCore }},
	{"median RTT", func(s summary.Summary) summary.Figure { return s.P50RTT }},
	{"loaded/idle p99 RTT ratio", func(s summary.Summary) summary.Figure {
		if s.Tests == nil {
			return summary.Figure{}
		}
		return s.Tests.P99Ratio
	}},
	{"parallel aggregate", func(s summary.Summary) summary.Figure {
		if s.Tests == nil {
			return summary.Figure{}
		}
		return s.Tests.Parallel
	}},
	{"% of line rate", func(s summary.Summary) summary.Figure {
		if s.Tests == nil {
			return summary.Figure{}
		}
		return s.Tests.PercentOfLineRate
	}},
}

// overlap says whether Welch's test finds no difference between a and b
// at ClaimConfidence: the take-aways call them indistinguishable.
func overlap(a, b summary.Figure) bool {
	return welch(a, b) >= 1-ClaimConfidence
}

// sure says how sure a claim that a and b differ is: the p-value of
// Welch's t-test at the figures' repetitions.
func sure(a, b summary.Figure) string {
	p := welch(a, b)
	reps := fmt.Sprintf("%d and %d repetitions", a.N, b.N)
	if a.N == b.N {
		reps = fmt.Sprintf("%d repetitions each", a.N)
	}
	if p < 0.001 {
		return "Welch's t-test over " + reps + ": p < 0.001"
	}
	return "Welch's t-test over " + reps + ": p = " + strconv.FormatFloat(p, 'f', 3, 64)
}

// evidence adds how sure a sentence's comparison of a and b is inside its
// closing parenthesis: "(1.37 ± 0.04 against 62.1 ± 5.9 Gbit/s; Welch's
// t-test over 5 repetitions each: p < 0.001)."
func evidence(text string, a, b summary.Figure) string {
	if s, ok := strings.CutSuffix(text, ")."); ok {
		return s + "; " + sure(a, b) + ")."
	}
	return strings.TrimSuffix(text, ".") + " (" + sure(a, b) + ")."
}

// withCI writes a figure's mean and the half-width of its 95% interval;
// an unstable figure (CV above 10%) keeps its mark: "62.1 ± 5.9 [CV 12%]".
func withCI(f summary.Figure) string {
	return summary.Num3(f.Mean) + " ± " + summary.Num3(f.HalfWidth) + cvMark(f)
}

// cvMark is " [CV 12%]" for an unstable figure, else empty.
func cvMark(f summary.Figure) string {
	if !f.Unstable() {
		return ""
	}
	return " [CV " + pctText(100*f.CV) + "]"
}

func ratio(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) + "x" }

func pctText(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) + "%" }

// at prefixes a non-empty parameter description with a space.
func at(desc string) string {
	if desc == "" {
		return ""
	}
	return " " + desc
}

// GenerateTakeAways derives the take-away sentences of a run from its rows.
// charts are the run's charts, used to link each sentence to its figure.
func GenerateTakeAways(run result.Run, cells []result.Cell, charts []Chart) TakeAways {
	rows := summary.Aggregate(run, cells)
	v := summary.VaryingParams(rows)
	t := TakeAways{Withheld: withheld(rows, v)}
	tc := claimCtx{runID: run.ID, rows: rows, v: v, link: chartLink(run.ID, charts),
		add: func(text, fig string, basis ...summary.Summary) {
			ta := TakeAway{Text: text, Figure: fig}
			for _, b := range basis {
				ta.Basis = append(ta.Basis, b.Key)
			}
			t.Claims = append(t.Claims, ta)
		}}

	sets := paramSets(rows)
	// Throughput, then CPU per Gbit/s, then RTT against native, per
	// parameter set.
	throughputClaims(tc, sets, &t.Claims)
	cpuClaims(tc, sets)
	rttClaims(tc, sets)
	loadedRTTClaims(tc, sets)

	// The tests beyond tcp_stream and tcp_rr: parallel, line rate, udp_sizes.
	parallelClaims(tc)
	lineRateClaims(tc)
	udpClaims(tc)
	connectClaims(tc)
	// The tunnels dimension: set-up growth and throughput at the largest N.
	scaleClaims(tc, cells)

	// The effect of one parameter on each method: MTU, offloads, streams, MSS.
	t.Claims = append(t.Claims, dimensionClaims(run.ID, rows, v, goodThroughput, tc.link)...)
	return t
}

// chartLink returns the link of a claim to its figure: the first of the
// candidate chart IDs that is one of charts, else the run's summary
// table.
func chartLink(runID string, charts []Chart) func(candidates ...string) string {
	ids := map[string]bool{}
	for _, c := range charts {
		ids[c.ID] = true
	}
	return func(candidates ...string) string {
		for _, c := range candidates {
			if ids[c] {
				return c
			}
		}
		return SummaryAnchor(runID)
	}
}

// withheld says, row by row, why no claim rests on a row, or on which of
// its figures a claim stands only where Welch's t-test is sure.
func withheld(rows []summary.Summary, v summary.Varying) []string {
	var out []string
	for _, r := range rows {
		if ok, why := usable(r); !ok {
			out = append(out, fmt.Sprintf("No claim rests on %s: %s.", summary.RowName(r, v), why))
			continue
		}
		var shaky []string
		for _, f := range claimFigures {
			if g := f.get(r); g.N > 0 && g.Unstable() {
				shaky = append(shaky, f.name)
			}
		}
		if len(shaky) > 0 {
			out = append(out, fmt.Sprintf("The %s of %s: unstable (coefficient of variation above 10%%, marked with its CV); a claim on it stands only where Welch's t-test finds the difference at %s confidence.",
				andList(shaky), summary.RowName(r, v), pctText(100*ClaimConfidence)))
		}
	}
	return out
}

// goodThroughput says whether a row's throughput may carry a claim.
func goodThroughput(r summary.Summary) bool { return goodFigure(r, r.Throughput) }

// throughputClaims compares each method's throughput with native's, per
// parameter set: indistinguishable, or the share of native's it reaches.
// With offloads varying, a method's share with them off joins its claim
// with them on (found in claims) in one sentence.
func throughputClaims(tc claimCtx, sets []paramSet, claims *[]TakeAway) {
	v, link, add := tc.v, tc.link, tc.add
	type reach struct{ r, native summary.Summary }
	var reaches []reach // "reaches N% of native" claims, merged below
	for _, ps := range sets {
		native, ok := findNative(ps.rows)
		if !ok {
			continue
		}
		p := native.Params
		desc := at(describe(p, v))
		tpFig := link(
			fmt.Sprintf("%s-mtu-%s-offloads-%s-p%d", tc.runID, p.Family, summary.OnOff(p.Offloads), p.Streams),
			fmt.Sprintf("%s-offloads-%s-mtu%d-p%d", tc.runID, p.Family, p.UnderlayMTU, p.Streams),
			fmt.Sprintf("%s-throughput-time-%s-%s", tc.runID, summary.SlugLabel(native.Label), ps.key.Slug()))
		for _, r := range ps.rows {
			if r.Method == summary.NativeMethod || !goodThroughput(r) || !goodThroughput(native) {
				continue
			}
			if overlap(r.Throughput, native.Throughput) {
				add(fmt.Sprintf("%s and native are indistinguishable in throughput%s: Welch's t-test finds no difference at %s confidence (%s against %s Gbit/s).",
					r.Label, desc, pctText(100*ClaimConfidence), withCI(r.Throughput), withCI(native.Throughput)), tpFig, r, native)
				continue
			}
			// Offloads on and off of one method become one sentence, as
			// in "vxlan reaches 81% of native at MTU 1500 with offloads on
			// and 44% with them off".
			merged := false
			if v.Offloads && !p.Offloads {
				for i, q := range reaches {
					k := summary.BaselineOf(q.r.Params)
					k.Offloads = false
					j := slices.IndexFunc(*claims, func(c TakeAway) bool { return slices.Equal(c.Basis, []string{q.r.Key, q.native.Key}) })
					if q.r.Label == r.Label && k == summary.BaselineOf(p) && q.r.Params.Offloads && j >= 0 {
						noOff := v
						noOff.Offloads = false
						ta := &(*claims)[j]
						ta.Text = fmt.Sprintf("%s reaches %s of native's throughput%s with offloads on (%s against %s Gbit/s; %s) and %s with them off (%s against %s Gbit/s; %s).",
							r.Label, pctText(100*q.r.Throughput.Mean/q.native.Throughput.Mean), at(describe(p, noOff)),
							withCI(q.r.Throughput), withCI(q.native.Throughput), sure(q.r.Throughput, q.native.Throughput),
							pctText(100*r.Throughput.Mean/native.Throughput.Mean), withCI(r.Throughput), withCI(native.Throughput), sure(r.Throughput, native.Throughput))
						ta.Figure = link(fmt.Sprintf("%s-offloads-%s-mtu%d-p%d", tc.runID, p.Family, p.UnderlayMTU, p.Streams), ta.Figure)
						ta.Basis = append(ta.Basis, r.Key, native.Key)
						reaches = slices.Delete(reaches, i, i+1)
						merged = true
						break
					}
				}
			}
			if !merged {
				add(evidence(fmt.Sprintf("%s reaches %s of native's throughput%s (%s against %s Gbit/s).",
					r.Label, pctText(100*r.Throughput.Mean/native.Throughput.Mean), desc,
					withCI(r.Throughput), withCI(native.Throughput)), r.Throughput, native.Throughput), tpFig, r, native)
				reaches = append(reaches, reach{r, native})
			}
		}
	}
}

// cpuClaims compares each method's Gbit/s per busy core with native's,
// per parameter set.
func cpuClaims(tc claimCtx, sets []paramSet) {
	for _, ps := range sets {
		native, ok := findNative(ps.rows)
		if !ok {
			continue
		}
		desc := at(describe(native.Params, tc.v))
		cpuFig := tc.link(fmt.Sprintf("%s-cpu-%s", tc.runID, ps.key.Slug()))
		for _, r := range ps.rows {
			if r.Method == summary.NativeMethod || !goodFigure(r, r.GbpsPerCore) || !goodFigure(native, native.GbpsPerCore) {
				continue
			}
			if overlap(r.GbpsPerCore, native.GbpsPerCore) {
				tc.add(fmt.Sprintf("%s and native are indistinguishable in Gbit/s per busy core%s (%s against %s Gbit/s per busy core).",
					r.Label, desc, withCI(r.GbpsPerCore), withCI(native.GbpsPerCore)), cpuFig, r, native)
			} else {
				tc.add(evidence(fmt.Sprintf("%s spends %s the CPU per Gbit/s of native%s (%s against %s Gbit/s per busy core).",
					r.Label, ratio(native.GbpsPerCore.Mean/r.GbpsPerCore.Mean), desc,
					withCI(r.GbpsPerCore), withCI(native.GbpsPerCore)), r.GbpsPerCore, native.GbpsPerCore), cpuFig, r, native)
			}
		}
	}
}

// rttClaims compares each method's median RTT with native's, per
// parameter set.
func rttClaims(tc claimCtx, sets []paramSet) {
	for _, ps := range sets {
		native, ok := findNative(ps.rows)
		if !ok {
			continue
		}
		desc := at(describe(native.Params, tc.v))
		rttFig := tc.link(fmt.Sprintf("%s-rtt-cdf-%s", tc.runID, ps.key.Slug()))
		for _, r := range ps.rows {
			if r.Method == summary.NativeMethod || !goodFigure(r, r.P50RTT) || !goodFigure(native, native.P50RTT) {
				continue
			}
			if overlap(r.P50RTT, native.P50RTT) {
				tc.add(fmt.Sprintf("%s and native are indistinguishable in median RTT%s (%s against %s µs).",
					r.Label, desc, withCI(r.P50RTT), withCI(native.P50RTT)), rttFig, r, native)
			} else {
				tc.add(evidence(fmt.Sprintf("%s's median RTT is %s native's%s (%s against %s µs).",
					r.Label, ratio(r.P50RTT.Mean/native.P50RTT.Mean), desc,
					withCI(r.P50RTT), withCI(native.P50RTT)), r.P50RTT, native.P50RTT), rttFig, r, native)
			}
		}
	}
}

// loadedRTTClaims says, per parameter set, how much a saturating
// transfer raises each method's p99 round-trip time over the idle
// tunnel's (latency under load).
func loadedRTTClaims(tc claimCtx, sets []paramSet) {
	for _, ps := range sets {
		desc := at(describe(ps.rows[0].Params, tc.v))
		fig := tc.link(fmt.Sprintf("%s-rtt-load-%s", tc.runID, ps.key.Slug()))
		for _, r := range ps.rows {
			ts := r.Tests
			if ts == nil || ts.P99Ratio.N == 0 || !goodFigure(r, ts.P99Ratio) || !stable(ts.IdleP99) || !stable(ts.LoadedP99) {
				continue
			}
			if overlap(ts.IdleP99, ts.LoadedP99) {
				tc.add(fmt.Sprintf("%s's p99 RTT under load is indistinguishable from idle%s: Welch's t-test finds no difference at %s confidence (%s against %s µs).",
					r.Label, desc, pctText(100*ClaimConfidence), withCI(ts.LoadedP99), withCI(ts.IdleP99)), fig, r)
				continue
			}
			tc.add(evidence(fmt.Sprintf("Under load, %s's p99 RTT is %s its idle p99%s (%s against %s µs).",
				r.Label, ratio(ts.P99Ratio.Mean)+cvMark(ts.P99Ratio), desc, withCI(ts.LoadedP99), withCI(ts.IdleP99)), ts.LoadedP99, ts.IdleP99), fig, r)
		}
	}
}

// findNative returns the native row of a parameter set.
func findNative(rows []summary.Summary) (summary.Summary, bool) {
	for _, r := range rows {
		if r.Method == summary.NativeMethod && r.Throughput.N > 0 {
			return r, true
		}
	}
	return summary.Summary{}, false
}

// dimensionClaims compares, per method, the rows that differ only in the
// underlay MTU, only in offloads, or only in streams: lowest value
// against highest.
func dimensionClaims(runID string, rows []summary.Summary, v summary.Varying, good func(summary.Summary) bool, link func(...string) string) []TakeAway {
	type dim struct {
		name  string
		clear func(*summary.BaselineKey)
		value func(result.Params) int
	}
	offVal := func(p result.Params) int {
		if p.Offloads {
			return 1
		}
		return 0
	}
	dims := []dim{
		{"mtu", func(k *summary.BaselineKey) { k.UnderlayMTU = 0 }, func(p result.Params) int { return p.UnderlayMTU }},
		{"offloads", func(k *summary.BaselineKey) { k.Offloads = false }, offVal},
		{"streams", func(k *summary.BaselineKey) { k.Streams = 0 }, func(p result.Params) int { return p.Streams }},
		{"mss", func(k *summary.BaselineKey) { k.MSS = 0 }, func(p result.Params) int { return p.MSS }},
	}
	var out []TakeAway
	for _, d := range dims {
		type gk struct {
			label string
			k     summary.BaselineKey
		}
		var order []gk
		groups := map[gk][]summary.Summary{}
		for _, r := range rows {
			k := summary.BaselineOf(r.Params)
			d.clear(&k)
			g := gk{r.Label, k}
			if _, ok := groups[g]; !ok {
				order = append(order, g)
			}
			groups[g] = append(groups[g], r)
		}
		for _, g := range order {
			rs := slices.Clone(groups[g])
			if len(rs) < 2 {
				continue
			}
			slices.SortStableFunc(rs, func(a, b summary.Summary) int { return cmp.Compare(d.value(a.Params), d.value(b.Params)) })
			lo, hi := rs[0], rs[len(rs)-1]
			if d.value(lo.Params) == d.value(hi.Params) || !good(lo) || !good(hi) {
				continue
			}
			p := lo.Params
			dv := v
			var fig string
			switch d.name {
			case "mtu":
				dv.Underlay = false
				fig = link(fmt.Sprintf("%s-mtu-%s-offloads-%s-p%d", runID, p.Family, summary.OnOff(p.Offloads), p.Streams))
			case "offloads":
				dv.Offloads = false
				fig = link(fmt.Sprintf("%s-offloads-%s-mtu%d-p%d", runID, p.Family, p.UnderlayMTU, p.Streams))
			case "streams":
				dv.Streams = false
				fig = link(fmt.Sprintf("%s-streams-throughput-%s-mtu%d-offloads-%s", runID, p.Family, p.UnderlayMTU, summary.OnOff(p.Offloads)))
			case "mss":
				dv.MSS = false
				// The throughput-against-MSS figure (sweepCharts): the
				// group's slug without the MSS.
				k := summary.BaselineOf(p)
				k.MSS = 0
				fig = link(fmt.Sprintf("%s-mss-lines-%s", runID, k.Slug()))
			}
			desc := at(describe(p, dv))
			both := fmt.Sprintf("(%s against %s Gbit/s)", withCI(hi.Throughput), withCI(lo.Throughput))
			r := hi.Throughput.Mean / lo.Throughput.Mean
			var text string
			same := overlap(lo.Throughput, hi.Throughput)
			switch d.name {
			case "mtu":
				if same {
					text = fmt.Sprintf("%s's throughput is indistinguishable at MTU %d and MTU %d%s %s.",
						lo.Label, lo.Params.UnderlayMTU, hi.Params.UnderlayMTU, desc, both)
				} else {
					text = fmt.Sprintf("MTU %d gives %s %s its MTU %d throughput%s %s.",
						hi.Params.UnderlayMTU, lo.Label, ratio(r), lo.Params.UnderlayMTU, desc, both)
					text = evidence(text, lo.Throughput, hi.Throughput)
					// The jumbo-frame gain beside native's, as the seeds
					// compare it.
					if n, ok := nativeGain(groups[gk{summary.NativeMethod, g.k}], lo, hi, d.value, good); ok && lo.Method != summary.NativeMethod {
						text = strings.TrimSuffix(text, ".") + fmt.Sprintf("; native gains %s.", ratio(n))
					}
				}
			case "offloads": // lo is off, hi is on
				both = fmt.Sprintf("(%s against %s Gbit/s)", withCI(lo.Throughput), withCI(hi.Throughput))
				if same {
					text = fmt.Sprintf("%s's throughput is indistinguishable with offloads on and off%s %s.", lo.Label, desc, both)
				} else {
					text = fmt.Sprintf("Turning offloads off leaves %s %s of its throughput%s %s.",
						lo.Label, pctText(100*lo.Throughput.Mean/hi.Throughput.Mean), desc, both)
				}
			case "mss":
				// lo is the smallest MSS asked for; 0 (the kernel's choice)
				// sorts first and reads as such.
				mssName := func(m int) string {
					if m == 0 {
						return "the kernel's MSS"
					}
					return fmt.Sprintf("MSS %d", m)
				}
				small, big := lo, hi
				if lo.Params.MSS == 0 {
					small, big = hi, lo // the kernel's choice is the largest segment
				}
				both = fmt.Sprintf("(%s against %s Gbit/s)", withCI(small.Throughput), withCI(big.Throughput))
				if same {
					text = fmt.Sprintf("%s's throughput is indistinguishable with %s and %s%s %s.",
						lo.Label, mssName(small.Params.MSS), mssName(big.Params.MSS), desc, both)
				} else {
					text = fmt.Sprintf("With %s, %s carries %s of its throughput with %s%s %s.",
						mssName(small.Params.MSS), lo.Label, pctText(100*small.Throughput.Mean/big.Throughput.Mean),
						mssName(big.Params.MSS), desc, both)
				}
			case "streams":
				if same {
					text = fmt.Sprintf("%s's aggregate throughput is indistinguishable with %s and %s%s %s.",
						lo.Label, summary.Streams(lo.Params.Streams), summary.Streams(hi.Params.Streams), desc, both)
				} else {
					text = fmt.Sprintf("With %s, %s carries %s its %d-stream throughput%s %s.",
						summary.Streams(hi.Params.Streams), lo.Label, ratio(r), lo.Params.Streams, desc, both)
				}
			}
			if !same && d.name != "mtu" {
				text = evidence(text, lo.Throughput, hi.Throughput)
			}
			out = append(out, TakeAway{Text: text, Figure: fig, Basis: []string{lo.Key, hi.Key}})
		}
	}
	return out
}

// andList joins "a", "b" and "c" as "a, b and c".
func andList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// WriteTakeAways writes the sentences as a numbered text list, then the
// withheld rows.
func WriteTakeAways(b *strings.Builder, t TakeAways) {
	if len(t.Claims) == 0 {
		b.WriteString("no take-away: no two rows are quiet and comparable, each with two or more ok repetitions\n")
	}
	for i, c := range t.Claims {
		fmt.Fprintf(b, "(%d) %s [%s]\n", i+1, c.Text, c.Figure)
	}
	for _, w := range t.Withheld {
		b.WriteString("- " + w + "\n")
	}
}

// nativeGain is native's throughput at hi's value of a dimension over
// its throughput at lo's, from native's rows of the same group, when both
// are good.
func nativeGain(native []summary.Summary, lo, hi summary.Summary, value func(result.Params) int, good func(summary.Summary) bool) (float64, bool) {
	var nlo, nhi *summary.Summary
	for i, r := range native {
		switch value(r.Params) {
		case value(lo.Params):
			nlo = &native[i]
		case value(hi.Params):
			nhi = &native[i]
		}
	}
	if nlo == nil || nhi == nil || !good(*nlo) || !good(*nhi) || nlo.Throughput.Mean <= 0 {
		return 0, false
	}
	return nhi.Throughput.Mean / nlo.Throughput.Mean, true
}
