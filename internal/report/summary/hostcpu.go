package summary

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// Whole-host CPU in the seeds' units: mpstat's busy % of all cores with
// its minimum, average and maximum over the transfer, per side where the
// sides are hosts of their own (netperf's -c -C), else for the one
// machine both ends share; and the flag for a transfer that one core
// carried while the others had room.

// Sides of a HostBusy.
const (
	// SideMachine: both ends share one machine (the local testbed).
	SideMachine = "machine"
	SideSender  = "sender"
	SideRecv    = "receiver"
)

// OneCoreBusyPercent is the busy % at which one core counts as full, and
// OthersRoomPercent the highest average busy % of the other cores at
// which they still had room: a core at 95% or more while the others
// averaged at most 75% means the transfer was bound to one core (the
// "IPsec uses one core" case).
const (
	OneCoreBusyPercent = 95.0
	OthersRoomPercent  = 75.0
)

// HostBusy is one host's whole-machine CPU over the ok repetitions of a
// Row (or of one frame size): busy % of all its cores, as mpstat shows it.
type HostBusy struct {
	// Side is SideMachine on a shared machine, else SideSender or
	// SideRecv; Host names the host of an ssh testbed.
	Side  string `json:"side"`
	Host  string `json:"host,omitempty"`
	Cores int    `json:"cores"`
	// Min and Max are the lowest and highest one-second busy % over every
	// repetition's transfer; Min is nil when the records lack it. Avg is
	// each repetition's average busy %, summarised over repetitions.
	Min *float64 `json:"busy_min_percent,omitempty"`
	Avg Figure   `json:"busy_avg_percent"`
	Max float64  `json:"busy_max_percent"`
	// OneCore is set when in some repetition one core was busy
	// OneCoreBusyPercent or more over the transfer while the host's
	// other cores averaged at most OthersRoomPercent.
	OneCore *OneCore `json:"one_core_saturated,omitempty"`
}

// OneCore describes a host whose transfer one core carried: the busiest
// such core over the repetitions.
type OneCore struct {
	CPU int `json:"cpu"`
	// Busy is that core's busy % over the transfer, OthersBusy the other
	// cores' average busy %.
	Busy       float64 `json:"busy_percent"`
	OthersBusy float64 `json:"others_busy_percent"`
	// Repetitions is how many ok repetitions showed it, of All.
	Repetitions int `json:"repetitions"`
	All         int `json:"repetitions_measured"`
}

// String says it in a table cell: "cpu3 99% (rest 12%) 2/3", the last
// being the repetitions that showed it of those measured.
func (o *OneCore) String() string {
	return fmt.Sprintf("cpu%d %.0f%% (rest %.0f%%) %d/%d", o.CPU, o.Busy, o.OthersBusy, o.Repetitions, o.All)
}

// OneCoreOf finds the core that carried a transfer alone in one record's
// per-core figures, if any: busy is 100 - idle per core over the transfer.
func OneCoreOf(cores []result.CoreUsage) (OneCore, bool) {
	if len(cores) < 2 {
		return OneCore{}, false
	}
	top, sum := 0, 0.0
	for i, c := range cores {
		sum += 100 - c.Idle
		if c.Idle < cores[top].Idle {
			top = i
		}
	}
	busy := 100 - cores[top].Idle
	others := (sum - busy) / float64(len(cores)-1)
	if busy < OneCoreBusyPercent || others > OthersRoomPercent {
		return OneCore{}, false
	}
	return OneCore{CPU: cores[top].CPU, Busy: Round6(busy), OthersBusy: Round6(others)}, true
}

// hostBusy summarises the whole-host CPU of CPU records, one per ok
// repetition (nil where a repetition has none): one entry for a shared
// machine, or one per side for hosts of their own, sender first.
func hostBusy(cpus []*result.CPU) []HostBusy {
	type acc struct {
		hb      HostBusy
		avg     []float64
		mins    []float64
		noMin   bool
		measure int
	}
	var order []string
	by := map[string]*acc{}
	add := func(side, host string, cores int, busyMin *float64, avg, busyMax float64, per []result.CoreUsage) {
		k := side + "\x00" + host
		a := by[k]
		if a == nil {
			a = &acc{hb: HostBusy{Side: side, Host: host}}
			by[k] = a
			order = append(order, k)
		}
		a.hb.Cores = max(a.hb.Cores, cores)
		a.avg = append(a.avg, avg)
		if busyMin == nil {
			a.noMin = true
		} else {
			a.mins = append(a.mins, *busyMin)
		}
		a.hb.Max = max(a.hb.Max, Round6(busyMax))
		a.measure++
		if o, ok := OneCoreOf(per); ok {
			if a.hb.OneCore == nil || o.Busy > a.hb.OneCore.Busy {
				n := 0
				if a.hb.OneCore != nil {
					n = a.hb.OneCore.Repetitions
				}
				o.Repetitions = n
				a.hb.OneCore = &o
			}
			a.hb.OneCore.Repetitions++
		}
	}
	for _, c := range cpus {
		if c == nil {
			continue
		}
		if len(c.Hosts) == 0 {
			if len(c.Samples) == 0 && c.BusyAvg == 0 && c.BusyMax == 0 {
				continue // no whole-machine figures in this record
			}
			m := c.BusyMin
			add(SideMachine, "", c.Cores, &m, c.BusyAvg, c.BusyMax, c.PerCore)
			continue
		}
		for _, h := range c.Hosts {
			add(h.Side, h.Host, h.Cores, h.BusyMin, h.BusyAvg, h.BusyMax, h.PerCore)
		}
	}
	out := make([]HostBusy, 0, len(order))
	for _, k := range order {
		a := by[k]
		a.hb.Avg = FigureOf(UnitPercent, a.avg)
		if !a.noMin && len(a.mins) > 0 {
			m := Round6(slices.Min(a.mins))
			a.hb.Min = &m
		}
		if a.hb.OneCore != nil {
			a.hb.OneCore.All = a.measure
		}
		out = append(out, a.hb)
	}
	slices.SortStableFunc(out, func(a, b HostBusy) int { return sideRank(a.Side) - sideRank(b.Side) })
	return out
}

func sideRank(s string) int {
	switch s {
	case SideSender:
		return 0
	case SideRecv:
		return 1
	}
	return 2
}

// rowCPUs returns the CPU records a row's whole-host figures come from,
// one per ok repetition: tcp_stream's, or, in cells without it, the
// parallel test's; and the test's name.
func rowCPUs(reps []result.Cell) ([]*result.CPU, string) {
	var stream, par []*result.CPU
	for _, c := range reps {
		if c.Status != result.StatusOK {
			continue
		}
		if c.CPU != nil {
			stream = append(stream, c.CPU)
		}
		if c.Parallel != nil && c.Parallel.CPU != nil {
			par = append(par, c.Parallel.CPU)
		}
	}
	if len(stream) > 0 {
		return stream, "tcp_stream"
	}
	if len(par) > 0 {
		return par, "parallel"
	}
	return nil, ""
}

// oneCoreSides names the sides of a row whose transfer one core carried.
func oneCoreSides(hb []HostBusy) []string {
	var out []string
	for _, h := range hb {
		if h.OneCore == nil {
			continue
		}
		o := h.OneCore
		what := fmt.Sprintf("cpu%d at %.0f%% with the rest at %.0f%% in %d of %d repetitions", o.CPU, o.Busy, o.OthersBusy, o.Repetitions, o.All)
		if h.Side != SideMachine {
			what = h.Side + " " + what
		}
		out = append(out, what)
	}
	return out
}

// BusyText formats a busy % for a table cell.
func BusyText(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// writeHostCPUTable writes the whole-host CPU beside the tracked
// processes' cores: one line per row and side.
func writeHostCPUTable(b *strings.Builder, rows []Summary, v Varying) error {
	if !slices.ContainsFunc(rows, func(r Summary) bool { return len(r.HostBusy) > 0 }) {
		return nil
	}
	b.WriteString("\nhost cpu: tracked processes' cores beside the whole host's busy % of all cores over the transfer " +
		"(mpstat's view)\n")
	hosts := slices.ContainsFunc(rows, func(r Summary) bool {
		return slices.ContainsFunc(r.HostBusy, func(h HostBusy) bool { return h.Side != SideMachine })
	})
	cols := []GridColumn{{Header: "method", Left: true}}
	if hosts {
		cols = append(cols, GridColumn{Header: "side", Left: true})
	}
	cols = append(cols, GridColumn{Header: "snd CPU"}, GridColumn{Header: "rcv CPU"}, GridColumn{Header: "cores"}, GridColumn{Header: "busy min %"},
		GridColumn{Header: "avg %"}, GridColumn{Header: "max %"}, GridColumn{Header: "one core ≥95%", Left: true})
	var grid []GridRow
	prev := ""
	for _, r := range rows {
		if len(r.HostBusy) == 0 {
			continue
		}
		if h := paramsHeading(r.Params, v); h != "" && h != prev {
			grid = append(grid, GridRow{section: h})
			prev = h
		}
		approx := r.CPUSplit == SplitApproximate || r.CPUSplit == SplitMixed
		for _, h := range r.HostBusy {
			snd, rcv := num(r.SenderCPU, 2, approx), num(r.ReceiverCPU, 2, approx)
			switch h.Side {
			case SideSender:
				rcv = GridCell{Text: Missing}
			case SideRecv:
				snd = GridCell{Text: Missing}
			}
			minText := Missing
			if h.Min != nil {
				minText = BusyText(*h.Min)
			}
			one := Missing
			if h.OneCore != nil {
				one = h.OneCore.String()
			}
			line := []GridCell{{Text: r.Label}}
			if hosts {
				line = append(line, GridCell{Text: h.Side})
			}
			line = append(line, snd, rcv, GridCell{Text: strconv.Itoa(h.Cores)}, GridCell{Text: minText}, num(h.Avg, 1, false),
				GridCell{Text: BusyText(h.Max)}, GridCell{Text: one})
			grid = append(grid, GridRow{Cells: line})
		}
	}
	return RenderGrid(b, cols, grid)
}

// hostCPUDefinitions explain the host cpu table, when it was written.
func hostCPUDefinitions(rows []Summary) []string {
	if !slices.ContainsFunc(rows, func(r Summary) bool { return len(r.HostBusy) > 0 }) {
		return nil
	}
	return []string{
		"host cpu: busy % of all the host's cores (100 = every core busy; 100 - idle - iowait, as mpstat), sampled " +
			"each second of the transfer (tcp_stream's, else the parallel test's): min and max over every repetition's " +
			"seconds, avg the mean of the repetitions' averages. Without a side column both ends share the one machine (local testbed); with " +
			"one, sender and receiver are hosts of their own (ssh testbed), each measured, like netperf's -c -C.",
		"one core ≥95%: a core was 95% or more busy over the transfer while the host's other cores (the rest) averaged " +
			"at most 75%, in n of the measured repetitions: the transfer was bound to one core (as IPsec's often is), not " +
			"to the machine.",
	}
}

// writeUDPCPUTable writes the udp_sizes test's CPU per frame size: the
// tracked processes' cores (generator and tunnel daemons) beside the
// whole host's busy %, for records that have the host's figures.
func writeUDPCPUTable(b *strings.Builder, rows []Summary, v Varying) error {
	has := slices.ContainsFunc(rows, func(r Summary) bool {
		return r.Tests != nil && slices.ContainsFunc(r.Tests.UDP, func(u UDPSizeSummary) bool { return len(u.HostBusy) > 0 })
	})
	if !has {
		return nil
	}
	b.WriteString("\nudp sizes cpu: generator and tunnel daemons' cores beside the whole host's busy % of all cores\n")
	cols := []GridColumn{{Header: "method", Left: true}, {Header: "frame"}, {Header: "side", Left: true}, {Header: "snd CPU"},
		{Header: "rcv CPU"}, {Header: "busy min %"}, {Header: "avg %"}, {Header: "max %"},
		{Header: "one core ≥95%", Left: true}}
	var grid []GridRow
	prev := ""
	for _, r := range rows {
		if r.Tests == nil || !slices.ContainsFunc(r.Tests.UDP, func(u UDPSizeSummary) bool { return len(u.HostBusy) > 0 }) {
			continue
		}
		if h := paramsHeading(r.Params, v); h != "" && h != prev {
			grid = append(grid, GridRow{section: h})
			prev = h
		}
		for _, u := range r.Tests.UDP {
			for _, h := range u.HostBusy {
				snd, rcv := num(u.SenderCPU, 2, false), num(u.ReceiverCPU, 2, false)
				switch h.Side {
				case SideSender:
					rcv = GridCell{Text: Missing}
				case SideRecv:
					snd = GridCell{Text: Missing}
				}
				minText, one := Missing, Missing
				if h.Min != nil {
					minText = BusyText(*h.Min)
				}
				if h.OneCore != nil {
					one = h.OneCore.String()
				}
				grid = append(grid, GridRow{Cells: []GridCell{{Text: r.Label}, {Text: strconv.Itoa(u.FrameBytes)}, {Text: h.Side},
					snd, rcv, {Text: minText}, num(h.Avg, 1, false), {Text: BusyText(h.Max)}, {Text: one}}})
			}
		}
	}
	return RenderGrid(b, cols, grid)
}

// oneCoreWarning names the rows (and frame sizes) whose transfer one core
// carried while the others had room, marked markOneCore in the table.
func oneCoreWarning(rows []Summary, v Varying) string {
	var what []string
	for _, r := range rows {
		if s := oneCoreSides(r.HostBusy); len(s) > 0 {
			what = append(what, RowName(r, v)+": "+strings.Join(s, "; "))
		}
		if r.Tests == nil {
			continue
		}
		for _, u := range r.Tests.UDP {
			if s := oneCoreSides(u.HostBusy); len(s) > 0 {
				what = append(what, fmt.Sprintf("%s, udp frame %d: %s", RowName(r, v), u.FrameBytes, strings.Join(s, "; ")))
			}
		}
	}
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf("%s one core: a core sat at %.0f%% or more over the transfer while the other cores averaged at most %.0f%% "+
		"(%s); the data path was bound to one core, not to the machine.", markOneCore, OneCoreBusyPercent, OthersRoomPercent,
		strings.Join(what, ", "))
}

// RowOneCore reports whether a row's transfer (or a UDP frame size's) was
// bound to one core.
func RowOneCore(r Summary) bool {
	if len(oneCoreSides(r.HostBusy)) > 0 {
		return true
	}
	return r.Tests != nil && slices.ContainsFunc(r.Tests.UDP, func(u UDPSizeSummary) bool { return len(oneCoreSides(u.HostBusy)) > 0 })
}
