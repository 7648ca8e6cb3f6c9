// Package trend turns stored runs into series over time and finds where
// each series changed: "did vxlan with offloads off get slower at some
// kernel, on which machine, and what changed between the last good run and
// the first bad one".
//
// A series is one figure (throughput, p50 or p99 round-trip time) of one
// cell key (method and condition: family, MTU, offloads, streams,
// direction, MSS, congestion control, WAN, options, sites) on one machine
// (host name) and testbed, one point per run in the order the runs
// started. A point is the mean over the run's ok repetitions of that cell.
//
// Change points come from internal/stats/changepoint (E-divisive means
// with Student's t-test, as Hunter and Apache Otava): the runs' means
// locate a change, and the t-test compares the repetitions of the runs
// either side, so more repetitions give more power. Noise is handled as
// the report handles it:
//   - a point measured while the machine was busy (Meta.Busy), or under
//     software emulation, is shown but left out of the detection: such
//     figures are not performance (Options.IncludeBusy keeps busy ones,
//     for a machine that is never idle, and notes them);
//   - a change is claimed only when its t-test p is at most Options.MaxP
//     and its size at least Options.ThresholdPercent; a change next to an
//     unstable point (CV over 10% across its repetitions), or one resting
//     on single repetitions, says so in Change.Notes.
//
// What differed between the last run before a change and the first after
// it is read from Facts, the one function that lists what is known of a
// run. Everything here is pure: the store is read by the caller.
package trend

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/report/summary"
	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
	"github.com/tunbench/tunbench/internal/stats/changepoint"
)

// RunRecords is one stored run with its cells.
type RunRecords struct {
	Run   result.Run
	Cells []result.Cell
}

// Metrics a series can follow.
const (
	MetricThroughput = "throughput"
	MetricP50RTT     = "p50_rtt"
	MetricP99RTT     = "p99_rtt"
)

// Metrics lists them in the order series are listed.
var Metrics = []string{MetricThroughput, MetricP50RTT, MetricP99RTT}

// Filter selects runs and series; the zero value selects all. Method,
// Testbed and Machine are exact; Condition parts must each be a "/"-part
// of the cell key (e.g. "offloads-off", "mtu9000", "cc-bbr"); Labels
// must each equal the run's fact "label:KEY" (see Facts).
type Filter struct {
	Method    string
	Testbed   string
	Machine   string
	Condition []string
	Labels    map[string]string
	Metric    string
	Since     time.Time
}

// Options tune Build.
type Options struct {
	Filter Filter
	// MaxP is the largest p of a claimed change; 0 means
	// changepoint.DefaultMaxP.
	MaxP float64
	// ThresholdPercent is the smallest claimed change, in percent of the
	// level before; 0 means DefaultThresholdPercent.
	ThresholdPercent float64
	// Acked are acknowledged change ids.
	Acked map[string]bool
	// IncludeBusy counts points measured on a busy host, for a machine
	// that is never idle; a change next to one says so in its notes.
	IncludeBusy bool
}

// DefaultThresholdPercent is the smallest change claimed by default, the
// same as compare's default threshold.
const DefaultThresholdPercent = 5

// Series is one figure of one cell key on one machine over time.
type Series struct {
	// ID names the series: machine, testbed, key and metric.
	ID      string `json:"id"`
	Key     string `json:"key"`
	Method  string `json:"method"`
	Machine string `json:"machine"`
	Testbed string `json:"testbed"`
	Metric  string `json:"metric"`
	Unit    string `json:"unit"`
	// HigherIsBetter is true for throughput, false for round-trip times.
	HigherIsBetter bool     `json:"higher_is_better"`
	Points         []Point  `json:"points"`
	Changes        []Change `json:"changes"`
}

// Point is one run's figure.
type Point struct {
	RunID   string    `json:"run_id"`
	Started time.Time `json:"started"`
	Mean    float64   `json:"mean"`
	// N is the number of ok repetitions, CV their coefficient of variation.
	N        int     `json:"n"`
	CV       float64 `json:"cv"`
	Unstable bool    `json:"unstable"`
	// Values are the repetitions' values, in the unit of the series.
	Values []float64 `json:"values"`
	// Busy is true when the run measured it while the machine was busy.
	Busy bool `json:"busy"`
	// Excluded says why the point is left out of the detection ("busy",
	// "emulated"); "" when it counts.
	Excluded string `json:"excluded,omitempty"`
}

// Change is a change point of a series.
type Change struct {
	// ID is stable across invocations (series and first run after), so it
	// can be acknowledged.
	ID string `json:"id"`
	// Index is the index in Series.Points of the first point after.
	Index int `json:"index"`
	// Before and After are the means of the segments either side.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Percent is the change in percent of Before.
	Percent float64 `json:"change_percent"`
	// P is the t-test's two-sided p-value between the segments.
	P       float64 `json:"p"`
	NBefore int     `json:"n_before"`
	NAfter  int     `json:"n_after"`
	// Regression is true when the figure got worse.
	Regression bool `json:"regression"`
	// Acked is true when the change was acknowledged (tunbench trend --ack).
	Acked bool `json:"acknowledged"`
	// LastBefore and FirstAfter are the runs either side of the change.
	LastBefore string    `json:"last_run_before"`
	FirstAfter string    `json:"first_run_after"`
	BeforeTime time.Time `json:"last_run_before_started"`
	AfterTime  time.Time `json:"first_run_after_started"`
	// Differences are the facts that differ between those two runs.
	Differences []Difference `json:"differences"`
	// Notes qualify the claim (unstable neighbours, single repetitions).
	Notes []string `json:"notes,omitempty"`
}

// Difference is one fact that differs between two runs.
type Difference struct {
	Fact   string `json:"fact"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Facts lists what is known of a run that may explain a change: kernel,
// versions of tunbench, Go and every tool, the distribution, CPU, host
// class and sysctls. Labels join here as "label:KEY".
func Facts(r result.Run) map[string]string {
	h := r.Host
	f := map[string]string{
		"kernel":   h.Kernel,
		"tunbench": h.Tunbench,
		"go":       h.GoVersion,
		"os":       h.OSRelease,
		"cpu":      h.CPUModel,
		"cpus":     fmt.Sprint(h.CPUCount),
		"class":    h.ClassLabel(),
	}
	for k, v := range h.Tools {
		f["tool:"+k] = v
	}
	for k, v := range h.Sysctls {
		f["sysctl:"+k] = v
	}
	for k, v := range r.Labels {
		f["label:"+k] = v
	}
	maps.DeleteFunc(f, func(_, v string) bool { return v == "" })
	return f
}

// Differ lists the facts that differ between a and b, sorted by name.
func Differ(a, b map[string]string) []Difference {
	var out []Difference
	for k, v := range a {
		if b[k] != v {
			out = append(out, Difference{k, v, b[k]})
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, Difference{k, "", v})
		}
	}
	slices.SortFunc(out, func(x, y Difference) int { return strings.Compare(x.Fact, y.Fact) })
	return out
}

// Machine is the machine a run measured on: its host name.
func Machine(r result.Run) string { return r.Host.Hostname }

// SelectRun reports whether run r passes f's run filters (testbed,
// machine, labels, since).
func (f Filter) SelectRun(r result.Run) bool {
	if f.Testbed != "" && r.Testbed != f.Testbed {
		return false
	}
	if f.Machine != "" && Machine(r) != f.Machine {
		return false
	}
	if !f.Since.IsZero() && r.Started.Before(f.Since) {
		return false
	}
	if len(f.Labels) > 0 {
		facts := Facts(r)
		for k, v := range f.Labels {
			if facts["label:"+k] != v {
				return false
			}
		}
	}
	return true
}

// selectKey reports whether a cell key and method pass f.
func (f Filter) selectKey(method, key string) bool {
	if f.Method != "" && method != f.Method {
		return false
	}
	parts := strings.Split(key, "/")
	for _, c := range f.Condition {
		if !slices.Contains(parts, c) {
			return false
		}
	}
	return true
}

// SeriesID names a series.
func SeriesID(machine, testbed, key, metric string) string {
	return machine + "|" + testbed + "|" + key + "|" + metric
}

// Build groups runs' cells into series, in time order, and finds their
// change points. Series come sorted by key, metric, machine and testbed.
func Build(runs []RunRecords, o Options) []Series {
	if o.MaxP <= 0 {
		o.MaxP = changepoint.DefaultMaxP
	}
	if o.ThresholdPercent <= 0 {
		o.ThresholdPercent = DefaultThresholdPercent
	}
	byStart := func(a, b RunRecords) int {
		if c := a.Run.Started.Compare(b.Run.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Run.ID, b.Run.ID)
	}
	if !slices.IsSortedFunc(runs, byStart) { // as the store reads them
		runs = slices.Clone(runs)
		slices.SortStableFunc(runs, byStart)
	}
	// Series by their parts rather than their id: the id is built once a
	// series, not once a point (a string each of 30,000 points on a
	// trend page over 10,000 runs).
	type seriesKey struct{ machine, testbed, key, metric string }
	bySeries := map[seriesKey]*Series{}
	// The runs either side of a change are the only ones whose facts
	// are read: they are listed when a change is found.
	selected := map[string]*result.Run{}
	for i := range runs {
		rr := &runs[i]
		if !o.Filter.SelectRun(rr.Run) {
			continue
		}
		selected[rr.Run.ID] = &rr.Run
		for _, g := range groupCells(rr.Run, rr.Cells, o.Filter) {
			for _, m := range Metrics {
				if o.Filter.Metric != "" && m != o.Filter.Metric {
					continue
				}
				vs := g.values(m)
				if len(vs) == 0 {
					continue
				}
				fig, unit, higher := stats.Summarize(vs), metricUnit(m), m == MetricThroughput
				sk := seriesKey{Machine(rr.Run), rr.Run.Testbed, g.key, m}
				s := bySeries[sk]
				if s == nil {
					s = &Series{ID: SeriesID(sk.machine, sk.testbed, sk.key, sk.metric), Key: g.key, Method: g.method,
						Machine: sk.machine, Testbed: sk.testbed, Metric: m, Unit: unit, HigherIsBetter: higher}
					bySeries[sk] = s
				}
				p := Point{RunID: rr.Run.ID, Started: rr.Run.Started, Mean: fig.Mean, N: fig.N, CV: fig.CV, Unstable: fig.Unstable(),
					Values: vs}
				switch {
				case g.emulated:
					p.Excluded = "emulated"
				case g.busy && !o.IncludeBusy:
					p.Excluded = "busy"
				}
				p.Busy = g.busy
				s.Points = append(s.Points, p)
			}
		}
	}
	out := make([]Series, 0, len(bySeries))
	facts := map[string]map[string]string{}
	factsOf := func(id string) map[string]string {
		f, ok := facts[id]
		if !ok {
			f = Facts(*selected[id])
			facts[id] = f
		}
		return f
	}
	for _, s := range bySeries {
		s.Changes = detect(*s, factsOf, o)
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Series) int {
		return cmpStrings([]string{a.Key, metricOrder(a.Metric), a.Machine, a.Testbed}, []string{b.Key, metricOrder(b.Metric), b.Machine, b.Testbed})
	})
	return out
}

func metricOrder(m string) string { return fmt.Sprint(slices.Index(Metrics, m)) }

func cmpStrings(a, b []string) int {
	for i := range a {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// group is the repetitions of one cell key in one run, summarised as
// summary.Aggregate summarises them for the figures a trend reads (its
// row's throughput, p50 and p99 RTT are stats.Summarize of the group's
// values; TestGroupsMatchAggregate holds the two together), without the
// rest of a report's row.
type group struct {
	key, method string
	// gbps, p50 and p99 are the ok repetitions' values of each metric
	// (values), in the order stored.
	gbps, p50, p99 []float64
	ok             int
	// emulated: the run's host or any repetition's was software
	// emulated (summary.CellEmulated); busy: an ok repetition was
	// measured while the machine was busy (Meta.Busy).
	emulated, busy bool
}

// groupCells groups a run's cells that pass f by key (summary.CellKey),
// in the order keys first appear, and keeps the groups with an ok
// repetition.
func groupCells(run result.Run, cells []result.Cell, f Filter) []group {
	var out []group
	var index map[string]int // once there are many groups
	for _, c := range cells {
		k := summary.CellKey(c)
		if !f.selectKey(c.Method, k) {
			continue
		}
		i, ok := -1, false
		if index != nil {
			i, ok = index[k]
		} else {
			i = slices.IndexFunc(out, func(g group) bool { return g.key == k })
			ok = i >= 0
		}
		if !ok {
			i = len(out)
			out = append(out, group{key: k, method: c.Method, emulated: run.Host.IsEmulated()})
			if index == nil && len(out) > 16 {
				index = make(map[string]int, 2*len(out))
				for j, g := range out {
					index[g.key] = j
				}
			} else if index != nil {
				index[k] = i
			}
		}
		g := &out[i]
		g.emulated = g.emulated || summary.CellEmulated(run, c)
		if c.Status == result.StatusOK {
			g.ok++
			g.busy = g.busy || c.Meta.Busy
			if t := c.Throughput; t != nil {
				g.gbps = append(g.gbps, t.BitsPerSecond/1e9)
			}
			if l := c.Latency; l != nil {
				g.p50 = append(g.p50, l.P50)
				g.p99 = append(g.p99, l.P99)
			}
		}
	}
	return slices.DeleteFunc(out, func(g group) bool { return g.ok == 0 })
}

// values are the ok repetitions' values of metric m, in its unit.
func (g group) values(m string) []float64 {
	switch m {
	case MetricThroughput:
		return g.gbps
	case MetricP50RTT:
		return g.p50
	case MetricP99RTT:
		return g.p99
	}
	return nil
}

// metricUnit is the unit of a metric's values.
func metricUnit(m string) string {
	if m == MetricThroughput {
		return summary.UnitGbps
	}
	return summary.UnitMicros
}

// detect finds the claimed change points of s over its included points:
// the runs' means locate a change, and its t-test compares their
// repetitions (changepoint.DetectSamples).
func detect(s Series, facts func(runID string) map[string]string, o Options) []Change {
	var idx []int // indices into s.Points of included points
	var samples [][]float64
	for i, p := range s.Points {
		if p.Excluded == "" && len(p.Values) > 0 {
			idx = append(idx, i)
			samples = append(samples, p.Values)
		}
	}
	var out []Change
	for _, cp := range changepoint.DetectSamples(samples, changepoint.Options{MaxP: o.MaxP}) {
		pct := cp.Change() * 100
		if math.Abs(pct) < o.ThresholdPercent {
			continue
		}
		before, after := s.Points[idx[cp.Index-1]], s.Points[idx[cp.Index]]
		c := Change{
			ID:    ChangeID(s.ID, after.RunID),
			Index: idx[cp.Index], Before: cp.Before, After: cp.After, Percent: pct, P: cp.P,
			NBefore: cp.NBefore, NAfter: cp.NAfter,
			Regression: (pct < 0) == s.HigherIsBetter,
			LastBefore: before.RunID, FirstAfter: after.RunID,
			BeforeTime: before.Started, AfterTime: after.Started,
			Differences: Differ(facts(before.RunID), facts(after.RunID)),
		}
		c.Acked = o.Acked[c.ID]
		for _, p := range []Point{before, after} {
			if p.Unstable {
				c.Notes = append(c.Notes, fmt.Sprintf("run %s is unstable here (CV %.0f%% over %d repetitions)", p.RunID, p.CV*100, p.N))
			}
			if p.Busy {
				c.Notes = append(c.Notes, fmt.Sprintf("run %s was measured while the machine was busy", p.RunID))
			}
			if p.N < 2 {
				c.Notes = append(c.Notes, fmt.Sprintf("run %s has one repetition: its spread is unknown", p.RunID))
			}
		}
		out = append(out, c)
	}
	return out
}

// ChangeID is a change's stable id: a hash of its series and the first
// run after it, 12 hex digits.
func ChangeID(series, firstAfter string) string {
	sum := sha256.Sum256([]byte(series + "@" + firstAfter))
	return hex.EncodeToString(sum[:6])
}

// Regressions counts the unacknowledged regressions of series.
func Regressions(series []Series) int {
	n := 0
	for _, s := range series {
		for _, c := range s.Changes {
			if c.Regression && !c.Acked {
				n++
			}
		}
	}
	return n
}
