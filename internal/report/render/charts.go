package render

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
)

// Chart kinds.
const (
	KindLines = "lines" // one line per series over X
	KindBars  = "bars"  // one bar per category and stack; see Series.Stack
)

// Chart is the data behind one figure, independent of how it is drawn:
// what the golden tests check, and what Render draws. Every chart is drawn
// from the stored records alone.
type Chart struct {
	// ID names the figure: the HTML anchor and the file name stem in the
	// report's files directory. It starts with the run id.
	ID string `json:"id"`
	// Section groups figures in the report (see the Section* constants).
	Section string `json:"section"`
	Kind    string `json:"kind"`
	Title   string `json:"title"`
	Caption string `json:"caption"`
	XLabel  string `json:"x_label"`
	YLabel  string `json:"y_label"`
	// LogX draws the x axis on a log scale. AltScale also draws a copy with
	// the other x scale (ID + "-linx" or "-logx"), offered as a toggle in
	// the HTML.
	LogX     bool `json:"log_x,omitempty"`
	AltScale bool `json:"alt_scale,omitempty"`
	// Categories are the bars' x labels (KindBars).
	Categories []string `json:"categories,omitempty"`
	Series     []Series `json:"series"`
	// ShareY names the group of figures meant to be compared side by side
	// (the per-method throughput-over-time figures of one condition);
	// Charts sets YMax, the highest point of any figure of the group, and
	// XMax, the furthest x, and each figure's axes run from 0 to them, so
	// that the group shares its axes and their ticks. Empty for a figure
	// that stands alone.
	ShareY string  `json:"share_y,omitempty"`
	YMax   float64 `json:"y_max,omitempty"`
	XMax   float64 `json:"x_max,omitempty"`
}

// Series is one line, or one set of bars (one bar per category).
type Series struct {
	Name string `json:"name"`
	// Color is an index into the palette; ColorMean is the mean line.
	Color  int  `json:"color"`
	Dashed bool `json:"dashed,omitempty"`
	// Stack groups bar series: series with the same Stack are stacked on
	// one another in order; different stacks stand side by side.
	Stack string    `json:"stack,omitempty"`
	X     []float64 `json:"x,omitempty"`
	Y     []float64 `json:"y"`
	// YErr is the half-width of the 95% confidence interval of each Y,
	// drawn as an error bar; empty when not defined.
	YErr []float64 `json:"y_err,omitempty"`
	// Panel names the panel a series is drawn in (KindPanels).
	Panel string `json:"panel,omitempty"`
}

// ColorMean is the colour of a mean line (red, dashed, as in the seed
// report's throughput series).
const ColorMean = -1

// Report sections, in the order the HTML gives them.
const (
	SectionThroughputTime = "throughput-time"
	SectionRTT            = "rtt-cdf"
	SectionCPU            = "cpu"
	SectionStreams        = "streams"
	SectionMTU            = "mtu"
	SectionOffloads       = "offloads"
)

// Sections lists the figure sections with their headings, in report order.
var Sections = []struct{ ID, Heading string }{
	{SectionThroughputTime, "Throughput over time"},
	{SectionRTT, "Round-trip time distribution"},
	{SectionLatencyLoad, "Latency under load"},
	{SectionCPU, "CPU"},
	{SectionStreams, "Aggregate throughput and CPU against streams"},
	{SectionParallel, "Parallel iperf3 processes: throughput and CPU against streams"},
	{SectionLineRate, "% of line rate against iperf3 processes"},
	{SectionUDPSizes, "Packet-size sweep"},
	{SectionConnect, "Connect and recover"},
	{SectionTunnels, "Tunnels: throughput, set-up, memory and reconf against their number"},
	{SectionMTU, "Underlay MTU"},
	{SectionMSS, "TCP maximum segment size"},
	{SectionOffloads, "Offloads"},
}

// paramSet is a group of rows that share every parameter but the method
// (the rows one native baseline applies to).
type paramSet struct {
	key  summary.BaselineKey
	rows []summary.Summary
}

// paramSets groups rows (already sorted by Aggregate) by baseline key, in
// order of first appearance.
func paramSets(rows []summary.Summary) []paramSet {
	var out []paramSet
	idx := map[summary.BaselineKey]int{}
	for _, r := range rows {
		k := summary.BaselineOf(r.Params)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, paramSet{key: k})
		}
		out[i].rows = append(out[i].rows, r)
	}
	return out
}

// describe names a parameter set in captions and sentences, giving only
// the parameters that vary in the run ("at MTU 1500 with offloads on").
func describe(p result.Params, v summary.Varying) string {
	var ps []string
	if v.Family {
		ps = append(ps, "over "+p.Family)
	}
	if v.Underlay {
		ps = append(ps, fmt.Sprintf("at MTU %d", p.UnderlayMTU))
	}
	if v.Offloads {
		ps = append(ps, "with offloads "+summary.OnOff(p.Offloads))
	}
	if v.Streams {
		ps = append(ps, "with "+summary.Streams(p.Streams))
	}
	if v.CC {
		ps = append(ps, "with "+summary.CCName(p.CongestionControl))
	}
	if v.Tunnels {
		ps = append(ps, "with "+summary.Tunnels(p.Tunnels))
	}
	if v.MSS && p.MSS > 0 {
		ps = append(ps, fmt.Sprintf("with MSS %d", p.MSS))
	}
	if v.OffloadSet && p.OffloadSet != "" {
		ps = append(ps, "with offload set "+p.OffloadSet)
	}
	if v.Pin {
		ps = append(ps, map[bool]string{true: "pinned", false: "unpinned"}[p.Pin])
	}
	if v.Direction {
		d := p.Direction
		if d == "" {
			d = "forward"
		}
		ps = append(ps, "in direction "+d)
	}
	if v.WAN {
		w := p.WAN.Label()
		if w == "" {
			w = "none"
		}
		ps = append(ps, "with WAN "+w)
	}
	if v.Sites && (p.SiteA != "" || p.SiteB != "") {
		ps = append(ps, "from "+p.SiteA+" to "+p.SiteB)
	}
	return strings.Join(ps, " ")
}

// describeAll names a parameter set fully, for figure titles.
func describeAll(p result.Params) string {
	return fmt.Sprintf("%s, MTU %d, offloads %s, %s", p.Family, p.UnderlayMTU, offloadsName(p), summary.Streams(p.Streams)) + ccSuffix(p) + restSuffix(p)
}

// offloadsName is the offload set's name when one was applied, else on
// or off.
func offloadsName(p result.Params) string {
	switch {
	case p.OffloadSet != "" && p.Offloads:
		return p.OffloadSet
	case p.OffloadSet != "":
		return "off (set " + p.OffloadSet + ")"
	}
	return summary.OnOff(p.Offloads)
}

// restSuffix names, in a title, the parameters beyond family, MTU,
// offloads, streams and congestion control that a cell may carry:
// more than one tunnel, pinning, MSS, direction, WAN condition and the
// ssh sites.
func restSuffix(p result.Params) string {
	var ps []string
	if p.Tunnels > 1 {
		ps = append(ps, summary.Tunnels(p.Tunnels))
	}
	if p.Pin {
		ps = append(ps, "pinned")
	}
	if p.MSS > 0 {
		ps = append(ps, fmt.Sprintf("MSS %d", p.MSS))
	}
	if p.Direction != "" && p.Direction != "forward" {
		ps = append(ps, p.Direction)
	}
	if w := p.WAN.Label(); w != "" {
		ps = append(ps, "WAN "+w)
	}
	if p.SiteA != "" || p.SiteB != "" {
		ps = append(ps, p.SiteA+" → "+p.SiteB)
	}
	if len(ps) == 0 {
		return ""
	}
	return ", " + strings.Join(ps, ", ")
}

// ccSuffix names the congestion control asked for in a title, when one
// was.
func ccSuffix(p result.Params) string {
	if p.CongestionControl == "" {
		return ""
	}
	return ", " + summary.CCName(p.CongestionControl)
}

// Charts returns the data of every figure the run's records support, in
// report order. A figure whose data the run lacks is left out.
func Charts(run result.Run, cells []result.Cell) []Chart {
	in := chartInput{run: run, rows: summary.Aggregate(run, cells), byKey: map[string][]result.Cell{}}
	for _, c := range cells {
		if c.Status == result.StatusOK {
			in.byKey[summary.CellKey(c)] = append(in.byKey[summary.CellKey(c)], c)
		}
	}
	in.sets = paramSets(in.rows)
	var out []Chart
	for _, kind := range figureKinds {
		out = append(out, kind(in)...)
	}
	shareYAxes(out)
	distinctCaptions(out)
	return out
}

// distinctCaptions makes every caption name what distinguishes its
// figure from the siblings that share it (figures of one kind for
// parameter sets that differ in MSS, direction and the like): it adds
// the conditions of the figure's title that not all of them share, as
// "Shown: MSS 536, reverse."
func distinctCaptions(charts []Chart) {
	groups := map[string][]int{}
	for i, c := range charts {
		groups[c.Caption] = append(groups[c.Caption], i)
	}
	for _, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		conds := make([][]string, len(idx))
		count := map[string]int{}
		for j, i := range idx {
			conds[j] = titleConditions(charts[i].Title)
			for _, c := range conds[j] {
				count[c]++
			}
		}
		for j, i := range idx {
			var own []string
			for _, c := range conds[j] {
				if count[c] < len(idx) {
					own = append(own, c)
				}
			}
			what := strings.Join(own, ", ")
			if what == "" {
				what = charts[i].Title
			}
			charts[i].Caption = strings.TrimSpace(charts[i].Caption) + " Shown: " + what + "."
		}
	}
}

// titleConditions are the conditions a figure's title lists in its last
// parentheses: "CPU (ipv4, MTU 1500, MSS 536)" gives ipv4, MTU 1500 and
// MSS 536.
func titleConditions(title string) []string {
	if !strings.HasSuffix(title, ")") {
		return nil
	}
	// Walk back to the parenthesis that opens the last one, splitting at
	// the commas outside nested ones ("offloads off (set x)").
	var out []string
	depth, end := 0, len(title)-1
	for i := len(title) - 1; i >= 0; i-- {
		switch title[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				out = append(out, strings.TrimSpace(title[i+1:end]))
				slices.Reverse(out)
				return out
			}
		case ',':
			if depth == 1 {
				out = append(out, strings.TrimSpace(title[i+1:end]))
				end = i
			}
		}
	}
	return nil
}

// chartInput is what every figure generator reads: the run, its rows and
// parameter sets, and its ok cells by key.
type chartInput struct {
	run   result.Run
	rows  []summary.Summary
	sets  []paramSet
	byKey map[string][]result.Cell
}

// figureKinds are the figure generators, in report order. Each returns no
// chart when the run lacks its data.
var figureKinds = []func(chartInput) []Chart{
	func(in chartInput) []Chart {
		var out []Chart
		for _, ps := range in.sets {
			for _, r := range ps.rows {
				if c, ok := throughputTimeChart(in.run.ID, r, in.byKey[r.Key]); ok {
					out = append(out, c)
				}
			}
		}
		return out
	},
	perSet(rttChart),
	perSet(latencyLoadChart),
	perSet(cpuChart),
	func(in chartInput) []Chart { return streamsCharts(in.run, in.rows) },
	func(in chartInput) []Chart { return parallelCharts(in.run.ID, in.rows) },
	func(in chartInput) []Chart { return lineRateBarCharts(in.run.ID, in.rows) },
	func(in chartInput) []Chart { return lineRateCharts(in.run.ID, in.rows) },
	func(in chartInput) []Chart {
		var out []Chart
		for _, ps := range in.sets {
			out = append(out, udpSizeCharts(in.run.ID, ps, in.byKey)...)
		}
		return out
	},
	func(in chartInput) []Chart {
		var out []Chart
		for _, ps := range in.sets {
			out = append(out, connectCharts(in.run.ID, ps, in.byKey)...)
		}
		return out
	},
	func(in chartInput) []Chart { return tunnelsCharts(in.run.ID, in.rows) },
	func(in chartInput) []Chart { return dimensionCharts(in.run.ID, in.rows, dimMTU) },
	func(in chartInput) []Chart { return dimensionCharts(in.run.ID, in.rows, dimOffloads) },
	seedCharts,
}

// perSet makes a generator of one chart per parameter set.
func perSet(f func(string, paramSet, map[string][]result.Cell) (Chart, bool)) func(chartInput) []Chart {
	return func(in chartInput) []Chart {
		var out []Chart
		for _, ps := range in.sets {
			if c, ok := f(in.run.ID, ps, in.byKey); ok {
				out = append(out, c)
			}
		}
		return out
	}
}

// intervalSide says whose count iperf3's intervals are: the client's,
// which sends unless the test is reversed (-R), and counts both halves
// with --bidir.
func intervalSide(direction string) string {
	switch direction {
	case "reverse":
		return "Receiver throughput"
	case "bidir":
		return "Throughput of both directions (sent plus received)"
	}
	return "Sender throughput"
}

// throughputTimeChart: every repetition's per-interval throughput in its
// own colour, and the mean over repetitions dashed (seed 000, Fig. 2 left).
// Warm-up (omitted) intervals are left out; x is the end of each interval
// in seconds from the start of the measured part.
func throughputTimeChart(runID string, r summary.Summary, reps []result.Cell) (Chart, bool) {
	c := Chart{
		ID:      fmt.Sprintf("%s-throughput-time-%s-%s", runID, summary.SlugLabel(r.Label), summary.BaselineOf(r.Params).Slug()),
		Section: SectionThroughputTime,
		Kind:    KindLines,
		Title:   fmt.Sprintf("%s (%s)", r.Label, describeAll(r.Params)),
		Caption: fmt.Sprintf("%s per interval of %s, %s, as the iperf3 client counted it: each repetition in its own colour, "+
			"the mean over repetitions dashed.", intervalSide(r.Params.Direction), r.Label, describeAll(r.Params)),
		XLabel: "time (s)",
		YLabel: "throughput (Gbit/s)",
		// The methods of one condition share a y axis.
		ShareY: fmt.Sprintf("%s-throughput-time-%s", runID, summary.BaselineOf(r.Params).Slug()),
	}
	var sums, ends []float64
	var counts []int
	for _, cell := range reps {
		t := cell.Throughput
		if t == nil {
			continue
		}
		s := Series{Name: fmt.Sprintf("rep %d", cell.Repetition), Color: cell.Repetition - 1}
		for _, iv := range measured(t.Intervals) {
			s.X = append(s.X, summary.Round6(iv.End))
			s.Y = append(s.Y, summary.Round6(iv.BitsPerSecond/1e9))
		}
		if len(s.X) == 0 {
			continue
		}
		for i := range s.X {
			if i == len(sums) {
				sums, ends, counts = append(sums, 0), append(ends, 0), append(counts, 0)
			}
			sums[i] += s.Y[i]
			ends[i] += s.X[i]
			counts[i]++
		}
		c.Series = append(c.Series, s)
	}
	if len(c.Series) == 0 {
		return Chart{}, false
	}
	if len(c.Series) > 1 {
		mean := Series{Name: "mean", Color: ColorMean, Dashed: true}
		for i := range sums {
			n := float64(counts[i])
			mean.X = append(mean.X, summary.Round6(ends[i]/n))
			mean.Y = append(mean.Y, summary.Round6(sums[i]/n))
		}
		c.Series = append(c.Series, mean)
	}
	return c, true
}

// measured returns the non-omitted intervals, with times shifted so the
// first measured interval starts at 0.
func measured(ivs []result.Interval) []result.Interval {
	var out []result.Interval
	for _, iv := range ivs {
		if !iv.Omitted {
			out = append(out, iv)
		}
	}
	if len(out) > 0 && out[0].Start > 0.5 {
		shift := out[0].Start
		for i := range out {
			out[i].Start -= shift
			out[i].End -= shift
		}
	}
	return out
}

// rttChart: the distribution of request/response round-trip times, one
// curve per method (seed 000, Fig. 2 right). Each curve averages, at every
// stored fraction, the RTT of the repetitions (quantile averaging).
func rttChart(runID string, ps paramSet, byKey map[string][]result.Cell) (Chart, bool) {
	p := ps.rows[0].Params
	c := Chart{
		ID:       fmt.Sprintf("%s-rtt-cdf-%s", runID, ps.key.Slug()),
		Section:  SectionRTT,
		Kind:     KindLines,
		Title:    "RTT CDF (" + describeAll(p) + ")",
		XLabel:   "round-trip time (µs)",
		YLabel:   "fraction of requests",
		LogX:     true,
		AltScale: true,
	}
	tool := ""
	for i, r := range ps.rows {
		s := Series{Name: r.Label, Color: i}
		var fr []float64
		var sum []float64
		var n []int
		for _, cell := range byKey[r.Key] {
			l := cell.Latency
			if l == nil || len(l.CDF) == 0 {
				continue
			}
			tool = l.Tool
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
			if n[j] == 0 {
				continue
			}
			s.X = append(s.X, summary.Round6(sum[j]/float64(n[j])))
			s.Y = append(s.Y, fr[j])
		}
		if len(s.X) > 0 {
			c.Series = append(c.Series, s)
		}
	}
	if len(c.Series) == 0 {
		return Chart{}, false
	}
	c.Caption = fmt.Sprintf("Distribution of request/response round-trip times on an otherwise idle path, measured "+
		"with %s; each curve averages the repetitions' quantiles. The x axis is logarithmic, so the tail shows; a linear one is available.", summary.OrDash(tool))
	return c, true
}

// isLoadTool reports whether a process role is a load tool (as opposed to
// a tunnel daemon).
func isLoadTool(role string) bool {
	for _, p := range []string{"iperf3", "sockperf", "rr", "tunbench"} {
		if strings.HasPrefix(role, p) {
			return true
		}
	}
	return false
}

// cpuChart: CPU per method (seed 000, Fig. 5): the sender's and the
// receiver's processes, each split into load tool and tunnel daemon and
// stacked, and the machine-wide softirq time beside them, all in cores
// (CPU time per wall second), mean over repetitions.
func cpuChart(runID string, ps paramSet, byKey map[string][]result.Cell) (Chart, bool) {
	type parts struct{ sndTool, sndDaemon, rcvTool, rcvDaemon, softirq float64 }
	var cats []string
	var vals []parts
	for _, r := range ps.rows {
		var acc parts
		n := 0
		for _, cell := range byKey[r.Key] {
			u := cell.CPU
			if u == nil {
				continue
			}
			n++
			var p parts
			if len(u.Processes) == 0 {
				p.sndTool, p.rcvTool = u.SenderCores, u.ReceiverCores
			}
			for _, pr := range u.Processes {
				tool := isLoadTool(pr.Role)
				switch {
				case pr.Side == "sender" && tool:
					p.sndTool += pr.Cores
				case pr.Side == "sender":
					p.sndDaemon += pr.Cores
				case tool:
					p.rcvTool += pr.Cores
				default:
					p.rcvDaemon += pr.Cores
				}
			}
			p.softirq = u.SoftirqCores
			acc.sndTool += p.sndTool
			acc.sndDaemon += p.sndDaemon
			acc.rcvTool += p.rcvTool
			acc.rcvDaemon += p.rcvDaemon
			acc.softirq += p.softirq
		}
		if n == 0 {
			continue
		}
		f := float64(n)
		cats = append(cats, r.Label)
		vals = append(vals, parts{acc.sndTool / f, acc.sndDaemon / f, acc.rcvTool / f, acc.rcvDaemon / f, acc.softirq / f})
	}
	if len(cats) == 0 {
		return Chart{}, false
	}
	p := ps.rows[0].Params
	c := Chart{
		ID:      fmt.Sprintf("%s-cpu-%s", runID, ps.key.Slug()),
		Section: SectionCPU,
		Kind:    KindBars,
		Title:   "CPU (" + describeAll(p) + ")",
		Caption: "CPU time per wall second (1.0 = one full core), mean over repetitions: the sender's and the " +
			"receiver's processes, each split into load tool and tunnel daemon, and beside them the softirq time " +
			"measured machine-wide, which cannot be charged to either side when both share the CPUs.",
		XLabel:     "method",
		YLabel:     "CPU (cores)",
		Categories: cats,
	}
	get := func(f func(parts) float64) []float64 {
		out := make([]float64, len(vals))
		for i, v := range vals {
			out[i] = summary.Round6(f(v))
		}
		return out
	}
	c.Series = []Series{
		{Name: "sender: load tool", Color: 0, Stack: "sender", Y: get(func(p parts) float64 { return p.sndTool })},
		{Name: "sender: tunnel daemon", Color: 1, Stack: "sender", Y: get(func(p parts) float64 { return p.sndDaemon })},
		{Name: "receiver: load tool", Color: 2, Stack: "receiver", Y: get(func(p parts) float64 { return p.rcvTool })},
		{Name: "receiver: tunnel daemon", Color: 3, Stack: "receiver", Y: get(func(p parts) float64 { return p.rcvDaemon })},
		{Name: "softirq (machine-wide)", Color: 4, Stack: "softirq", Y: get(func(p parts) float64 { return p.softirq })},
	}
	// Daemon parts stay in the data (zero) so every CPU figure has the same
	// legend; nothing is hidden.
	return c, true
}

// streamsCharts: aggregate throughput and machine CPU against the number of
// parallel streams (seed 000, Figs. 6a and 6b), one line per method, for
// every group of rows that differ only in streams and has at least two
// stream counts.
func streamsCharts(run result.Run, rows []summary.Summary) []Chart {
	type groupKey struct {
		summary.BaselineKey
	}
	var order []groupKey
	groups := map[groupKey][]summary.Summary{}
	for _, r := range rows {
		k := summary.BaselineOf(r.Params)
		k.Streams = 0
		g := groupKey{k}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], r)
	}
	var out []Chart
	for _, g := range order {
		rs := groups[g]
		counts := map[int]bool{}
		for _, r := range rs {
			counts[r.Params.Streams] = true
		}
		if len(counts) < 2 {
			continue
		}
		p := rs[0].Params
		slug := strings.Replace(g.Slug(), "-p0", "", 1)
		desc := groupDesc(p)
		tp := Chart{
			ID: fmt.Sprintf("%s-streams-throughput-%s", run.ID, slug), Section: SectionStreams, Kind: KindLines,
			Title:   "Aggregate throughput against streams (" + desc + ")",
			Caption: "Receiver throughput summed over all parallel TCP streams, mean over repetitions with its 95% confidence interval.",
			XLabel:  "parallel TCP streams", YLabel: "throughput (Gbit/s)", LogX: true,
		}
		cpu := Chart{
			ID: fmt.Sprintf("%s-streams-cpu-%s", run.ID, slug), Section: SectionStreams, Kind: KindLines,
			Title:   "Machine CPU against streams (" + desc + ")",
			Caption: "Whole-machine CPU utilisation during the transfer, in % of all cores, mean over repetitions with its 95% confidence interval.",
			XLabel:  "parallel TCP streams", YLabel: "CPU (% of all cores)", LogX: true,
		}
		labels := []string{}
		for _, r := range rs {
			if !slices.Contains(labels, r.Label) {
				labels = append(labels, r.Label)
			}
		}
		for i, l := range labels {
			var mine []summary.Summary
			for _, r := range rs {
				if r.Label == l {
					mine = append(mine, r)
				}
			}
			slices.SortFunc(mine, func(a, b summary.Summary) int { return cmp.Compare(a.Params.Streams, b.Params.Streams) })
			ts := Series{Name: l, Color: i}
			cs := Series{Name: l, Color: i}
			for _, r := range mine {
				if r.Throughput.N > 0 {
					ts.X = append(ts.X, float64(r.Params.Streams))
					ts.Y = append(ts.Y, summary.Round6(r.Throughput.Mean))
					ts.YErr = append(ts.YErr, summary.Round6(r.Throughput.HalfWidth))
				}
				if r.BusyCores.N > 0 && run.Host.CPUCount > 0 {
					k := 100 / float64(run.Host.CPUCount)
					cs.X = append(cs.X, float64(r.Params.Streams))
					cs.Y = append(cs.Y, summary.Round6(r.BusyCores.Mean*k))
					cs.YErr = append(cs.YErr, summary.Round6(r.BusyCores.HalfWidth*k))
				}
			}
			if len(ts.X) > 0 {
				tp.Series = append(tp.Series, ts)
			}
			if len(cs.X) > 0 {
				cpu.Series = append(cpu.Series, cs)
			}
		}
		for _, c := range []Chart{tp, cpu} {
			if len(c.Series) > 0 {
				out = append(out, c)
			}
		}
	}
	return out
}

// dimension is a parameter compared side by side in bar figures.
type dimension struct {
	section string
	name    string
	// value returns the parameter's value label; clear removes it from a
	// baseline key so rows differing only in it group together.
	value func(result.Params) string
	clear func(*summary.BaselineKey)
	title string
	per   string // what one bar stands for, in captions
}

var (
	dimMTU = dimension{
		section: SectionMTU, name: "mtu",
		value: func(p result.Params) string { return fmt.Sprintf("MTU %d", p.UnderlayMTU) },
		clear: func(k *summary.BaselineKey) { k.UnderlayMTU = 0 },
		title: "Underlay MTU",
		per:   "underlay MTU",
	}
	dimOffloads = dimension{
		section: SectionOffloads, name: "offloads",
		value: func(p result.Params) string { return "offloads " + summary.OnOff(p.Offloads) },
		clear: func(k *summary.BaselineKey) { k.Offloads = false },
		title: "Offloads on against off",
		per:   "offload state (TSO, GSO and GRO on the underlay)",
	}
)

// dimensionCharts: throughput per method with one bar per value of the
// dimension (MTU 1500 against 9000, offloads on against off), for every
// group of rows that differ only in that dimension, with the 95%
// confidence interval as an error bar.
func dimensionCharts(runID string, rows []summary.Summary, d dimension) []Chart {
	var order []summary.BaselineKey
	groups := map[summary.BaselineKey][]summary.Summary{}
	for _, r := range rows {
		k := summary.BaselineOf(r.Params)
		d.clear(&k)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Chart
	for _, k := range order {
		rs := groups[k]
		var values, labels []string
		for _, r := range rs {
			if v := d.value(r.Params); !slices.Contains(values, v) {
				values = append(values, v)
			}
			if !slices.Contains(labels, r.Label) {
				labels = append(labels, r.Label)
			}
		}
		if len(values) < 2 {
			continue
		}
		if d.name == "offloads" {
			slices.Reverse(values) // "on" first: the usual state
			if values[0] != "offloads on" {
				slices.Reverse(values)
			}
		}
		p := rs[0].Params
		var rest []string
		if d.name != "mtu" {
			rest = append(rest, fmt.Sprintf("MTU %d", p.UnderlayMTU))
		}
		if d.name != "offloads" {
			rest = append(rest, "offloads "+offloadsName(p))
		} else if p.OffloadSet != "" {
			rest = append(rest, "offload set "+p.OffloadSet)
		}
		desc := fmt.Sprintf("%s, %s, %s", p.Family, strings.Join(rest, ", "), summary.Streams(p.Streams)) + ccSuffix(p) + restSuffix(p)
		// The group's key names every other parameter; the dimension's own
		// (cleared) value is left out.
		slug := strings.Replace(k.Slug(), "-offloads-off-", "-", 1)
		if d.name == "mtu" {
			slug = strings.Replace(k.Slug(), "-mtu0-", "-", 1)
		}
		c := Chart{
			ID: fmt.Sprintf("%s-%s-%s", runID, d.name, slug), Section: d.section, Kind: KindBars,
			Title: d.title + " (" + desc + ")",
			Caption: fmt.Sprintf("Receiver throughput per method, one bar per %s, mean over repetitions; "+
				"error bars are the 95%% confidence interval.", d.per),
			XLabel: "method", YLabel: "throughput (Gbit/s)", Categories: labels,
		}
		for i, val := range values {
			s := Series{Name: val, Color: i, Stack: val, Y: make([]float64, len(labels)), YErr: make([]float64, len(labels))}
			found := false
			for _, r := range rs {
				if d.value(r.Params) != val || r.Throughput.N == 0 {
					continue
				}
				j := slices.Index(labels, r.Label)
				s.Y[j] = summary.Round6(r.Throughput.Mean)
				s.YErr[j] = summary.Round6(r.Throughput.HalfWidth)
				found = true
			}
			if found {
				c.Series = append(c.Series, s)
			}
		}
		if len(c.Series) >= 2 {
			out = append(out, c)
		}
	}
	return out
}

// shareYAxes sets YMax of every chart with a ShareY group to the highest
// point of any chart of that group, and XMax to the furthest x, so that
// the group's figures share both axes and their ticks.
func shareYAxes(charts []Chart) {
	tops, ends := map[string]float64{}, map[string]float64{}
	for _, c := range charts {
		if c.ShareY != "" {
			tops[c.ShareY] = max(tops[c.ShareY], dataTop(c))
			for _, s := range c.Series {
				for _, x := range s.X {
					ends[c.ShareY] = max(ends[c.ShareY], x)
				}
			}
		}
	}
	for i := range charts {
		if g := charts[i].ShareY; g != "" {
			charts[i].YMax = summary.Round6(tops[g])
			charts[i].XMax = summary.Round6(ends[g])
		}
	}
}
