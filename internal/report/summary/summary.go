// Package summary is the summary model of a run: its records aggregated
// into one Summary row per cell, with the warnings, the paper's reference
// figures beside ours, and the aligned terminal table that prints them.
//
// Contract: the report packages (summary, export, compare, render) read
// only records (a result.Run and its []result.Cell) and never the machine,
// so a report regenerates offline from the store alone, identically every
// time. Repetitions of one cell (same Key) are aggregated into a Summary
// with stats.Summarize; only repetitions with status "ok" contribute
// figures, failed and skipped ones are counted and their errors listed.
// Nothing here hides a doubt: unstable figures (CV above 10%), busy
// background, approximate CPU attribution and emulated testbeds are flagged
// in the table footer and in the JSON export. The definitions of every
// figure are in docs/results.md.
package summary

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/stats"
)

// NativeMethod is the method used as the baseline for "% of native".
const NativeMethod = "native"

// Units of the summary figures, as written into Figure.Unit.
const (
	UnitGbps        = "Gbit/s"
	UnitMicros      = "us"
	UnitCores       = "cores"
	UnitGbpsPerCore = "Gbit/s per busy core"
)

// CPU split labels (result.CPU.Split), plus the one used when repetitions
// of one cell disagree.
const (
	SplitProcess     = "process"
	SplitApproximate = "approximate"
	// SplitHosts: sender and receiver on hosts of their own (ssh testbed),
	// each host's busy time its side's cost.
	SplitHosts = "hosts"
	SplitMixed = "mixed"
)

// Summary is one aggregated row: all repetitions of one cell (one method
// with one parameter set) in one run. Figures are over the repetitions with
// status "ok"; a figure that was not measured has N == 0 and is omitted
// from JSON.
type Summary struct {
	Key            string `json:"key"`
	Method         string `json:"method"`
	Implementation string `json:"implementation"`
	// Datapath is where the method's packets were processed, for methods
	// with more than one place to do it ("kernel", "netdev", "libipsec",
	// "userspace"; see result.Meta.Datapath); empty for the others.
	Datapath string `json:"datapath,omitempty"`
	// Label is how the table, figures, take-aways and comparisons name
	// the row: the method, plus the implementation when the run has
	// several for that method, plus the data path in parentheses where
	// the method has more than one ("ovs-geneve (netdev)").
	Label  string        `json:"label"`
	Params result.Params `json:"params"`

	Repetitions int `json:"repetitions"`
	OK          int `json:"repetitions_ok"`
	Failed      int `json:"repetitions_failed"`
	Skipped     int `json:"repetitions_skipped"`
	// Problems are the failed and skipped repetitions with their errors.
	Problems []Problem `json:"problems,omitempty"`

	// Throughput is the receiver's rate (Throughput.BitsPerSecond) in Gbit/s.
	Throughput Figure `json:"throughput_gbps,omitzero"`
	// P50RTT and P99RTT are the means over repetitions of each repetition's
	// RTT percentile, in microseconds.
	P50RTT Figure `json:"p50_rtt_us,omitzero"`
	P99RTT Figure `json:"p99_rtt_us,omitzero"`
	// SenderCPU and ReceiverCPU are CPU time per wall second attributed to
	// each side (1.0 = one full core); see CPUSplit.
	SenderCPU   Figure `json:"sender_cpu_cores,omitzero"`
	ReceiverCPU Figure `json:"receiver_cpu_cores,omitzero"`
	// SoftirqCores is machine-wide softirq time per wall second, which no
	// side can be charged with when both share the CPUs.
	SoftirqCores Figure `json:"softirq_cores,omitzero"`
	// BusyCores is the whole machine's busy CPU during the transfer in
	// cores: CPU.BusyAvg/100 * CPU.Cores.
	BusyCores Figure `json:"busy_cores,omitzero"`
	// GbpsPerCore is, per repetition, throughput in Gbit/s divided by
	// BusyCores, then summarised over repetitions.
	GbpsPerCore Figure `json:"gbps_per_busy_core,omitzero"`
	// HostBusy is the whole-host CPU in mpstat's units (busy % of all
	// cores, min, average and max over the transfer) per side where the
	// sides are hosts of their own, else for the one machine, with the
	// one-core flag; from HostBusyTest's CPU records (tcp_stream's, else
	// the parallel test's).
	HostBusy     []HostBusy `json:"host_busy,omitempty"`
	HostBusyTest string     `json:"host_busy_test,omitempty"`

	// PercentNative is 100 * Throughput.Mean / native Throughput.Mean, where
	// native is the row with method "native" and the same family, underlay
	// MTU, offloads, streams, durations and pinning in the same run, rounded
	// to 6 significant digits. Nil when there is no such baseline with a
	// measured throughput.
	PercentNative *float64 `json:"percent_of_native_percent"`

	// CPUSplit is "process", "approximate", "mixed" (repetitions disagree)
	// or empty when no CPU was sampled.
	CPUSplit string `json:"cpu_split,omitempty"`
	// Unstable is true when any figure shown in the table (throughput, RTTs,
	// sender and receiver CPU, Gbit/s per core) has a CV above 10%.
	Unstable bool `json:"unstable"`
	// BackgroundBusy is true when the background load before any counted
	// repetition was high enough to distrust its figures.
	BackgroundBusy bool `json:"background_busy"`
	// BackgroundBusyMax is the highest background utilisation measured
	// before a counted repetition, in percent of the whole machine.
	BackgroundBusyMax float64 `json:"background_busy_max_percent"`
	// Congestion is the TCP congestion control the repetitions'
	// connections used, as their sockets reported it (distinct names
	// joined with "+"); empty for older records.
	Congestion string `json:"congestion_control_used,omitempty"`
	// Emulated is true when the endpoints ran in a software-emulated VM:
	// the figures measure function, not performance.
	Emulated bool `json:"emulated"`
	// VMs name the virtual machines the row was measured on by hypervisor
	// ("KVM"; on the ssh testbed "site: KVM" per host); empty on bare
	// metal, under emulation and in records older than host classes.
	VMs []string `json:"vm_hosts,omitempty"`
	// Tests are the figures of the parallel and latency_under_load tests
	// and the derived figures; nil for cells that have none.
	Tests *TestSummary `json:"tests,omitempty"`
	// Scale is the tunnels dimension's cost (set-up, adds, teardown,
	// memory per tunnel) and the reconf test; nil for cells that have
	// neither.
	Scale *ScaleSummary `json:"scale,omitempty"`
}

// Problem is one repetition that did not produce figures.
type Problem struct {
	Repetition int    `json:"repetition"`
	Status     string `json:"status"`
	Error      string `json:"error"`
}

// Aggregate groups cells by Key and summarises each group. Rows come in
// the order their parameter set first appears in cells; within one
// parameter set the native baseline comes first, then the others in the
// order they first appear.
func Aggregate(run result.Run, cells []result.Cell) []Summary {
	var (
		order  []string
		groups = map[string][]result.Cell{}
	)
	for _, c := range cells {
		k := CellKey(c)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
	}
	rows := make([]Summary, 0, len(order))
	for _, k := range order {
		rows = append(rows, summarize(run, k, groups[k]))
	}
	sortRows(rows)
	labelRows(rows)
	setPercentNative(rows)
	setParallelPercentNative(rows)
	setUDPPercentNative(rows)
	return rows
}

// CellKey is the grouping key; a cell without one is grouped by method,
// implementation and parameters.
func CellKey(c result.Cell) string {
	if c.Key != "" {
		return c.Key
	}
	b, _ := json.Marshal(c.Params) // Params always encodes
	return c.Method + "/" + c.Implementation + "/" + string(b)
}

// summarize aggregates the repetitions of one cell.
func summarize(run result.Run, key string, reps []result.Cell) Summary {
	first := reps[0]
	s := Summary{
		Key:            key,
		Method:         first.Method,
		Implementation: first.Implementation,
		Params:         first.Params,
		Repetitions:    len(reps),
		Emulated:       run.Host.IsEmulated(),
	}
	var gbps, p50, p99, snd, rcv, sirq, busy, perCore []float64
	splits := map[string]bool{}
	for _, c := range reps {
		s.Emulated = s.Emulated || CellEmulated(run, c)
		s.Congestion = joinDistinct(s.Congestion, c.Meta.CongestionControl)
		s.Datapath = joinDistinct(s.Datapath, CellDatapath(c))
		s.VMs = addVMs(s.VMs, run, c)
		switch c.Status {
		case result.StatusOK:
			s.OK++
		case result.StatusSkipped:
			s.Skipped++
			s.Problems = append(s.Problems, Problem{c.Repetition, c.Status, c.Error})
			continue
		default:
			s.Failed++
			s.Problems = append(s.Problems, Problem{c.Repetition, c.Status, c.Error})
			continue
		}
		s.BackgroundBusy = s.BackgroundBusy || c.Meta.Busy
		s.BackgroundBusyMax = max(s.BackgroundBusyMax, c.Meta.BackgroundBusy)
		var g float64
		if t := c.Throughput; t != nil {
			g = t.BitsPerSecond / 1e9
			gbps = append(gbps, g)
		}
		if l := c.Latency; l != nil {
			p50 = append(p50, l.P50)
			p99 = append(p99, l.P99)
		}
		if u := c.CPU; u != nil {
			snd = append(snd, u.SenderCores)
			rcv = append(rcv, u.ReceiverCores)
			sirq = append(sirq, u.SoftirqCores)
			b := u.BusyAvg / 100 * float64(u.Cores)
			busy = append(busy, b)
			if c.Throughput != nil && b > 0 {
				perCore = append(perCore, g/b)
			}
			if u.Split != "" {
				splits[u.Split] = true
			}
		}
	}
	s.Throughput = FigureOf(UnitGbps, gbps)
	s.P50RTT = FigureOf(UnitMicros, p50)
	s.P99RTT = FigureOf(UnitMicros, p99)
	s.SenderCPU = FigureOf(UnitCores, snd)
	s.ReceiverCPU = FigureOf(UnitCores, rcv)
	s.SoftirqCores = FigureOf(UnitCores, sirq)
	s.BusyCores = FigureOf(UnitCores, busy)
	s.GbpsPerCore = FigureOf(UnitGbpsPerCore, perCore)
	for _, f := range s.figures() {
		s.Unstable = s.Unstable || f.Unstable()
	}
	summarizeTests(&s, reps)
	s.Scale = summarizeScale(reps)
	cpus, test := rowCPUs(reps)
	if s.HostBusy = hostBusy(cpus); len(s.HostBusy) > 0 {
		s.HostBusyTest = test
	}
	for i := range s.HostBusy {
		if s.HostBusy[i].Side == SideMachine {
			s.HostBusy[i].Host = run.Host.Hostname
		}
	}
	switch len(splits) {
	case 0:
	case 1:
		for k := range splits {
			s.CPUSplit = k
		}
	default:
		s.CPUSplit = SplitMixed
	}
	return s
}

// FigureOf summarises xs, measured in unit.
func FigureOf(unit string, xs []float64) Figure {
	return Figure{Unit: unit, Summary: stats.Summarize(xs)}
}

// figures returns the figures the table shows, which are the ones that can
// flag a row unstable.
func (s *Summary) figures() []Figure {
	return []Figure{s.Throughput, s.P50RTT, s.P99RTT, s.SenderCPU, s.ReceiverCPU, s.GbpsPerCore}
}

// figureNames name figures() in order, as the unstable warning names them.
var figureNames = []string{"throughput", "p50 RTT", "p99 RTT", "sender CPU", "receiver CPU", "Gbit/s per busy core"}

// UnstableFigures names the row's figures whose coefficient of variation
// is above 10%, each with its CV: "p99 RTT CV 14%".
func (s *Summary) UnstableFigures() []string {
	var out []string
	for i, f := range s.figures() {
		if f.Unstable() {
			out = append(out, fmt.Sprintf("%s CV %.0f%%", figureNames[i], f.CV*100))
		}
	}
	return out
}

// joinDistinct adds the "+"-joined names of add to those of set that it
// lacks.
func joinDistinct(set, add string) string {
	names := strings.FieldsFunc(set, func(r rune) bool { return r == '+' })
	for _, n := range strings.FieldsFunc(add, func(r rune) bool { return r == '+' }) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, "+")
}
