package summary

import (
	"slices"
	"strconv"
	"strings"

	"github.com/tunbench/tunbench/internal/result"
)

// ScaleSummary is the tunnels dimension's cost over the ok repetitions
// of one cell (result.Scale, result.Reconf; docs/scale.md): what setting
// up the N tunnels took, each tunnel's add, the teardown, the memory one
// tunnel costs, and the reconf test's disruption when one more tunnel
// is added under load. Figures not measured have N == 0 and are omitted
// from JSON.
type ScaleSummary struct {
	// Unit is what one tunnel is for the method ("VXLAN device", "peer").
	Unit string `json:"unit,omitempty"`
	// Setup and Teardown are the method's whole set-up and teardown of
	// the N tunnels; AddP50 and AddP99 each repetition's percentiles of
	// one tunnel's add, over the repetitions that timed adds.
	Setup    Figure `json:"setup_s,omitzero"`
	Teardown Figure `json:"teardown_s,omitzero"`
	AddP50   Figure `json:"add_p50_s,omitzero"`
	AddP99   Figure `json:"add_p99_s,omitzero"`
	// PerTunnel is the memory one tunnel costs: the slab's growth plus
	// the daemons' resident memory, over N.
	PerTunnel Figure `json:"memory_per_tunnel_bytes,omitzero"`
	// SharedKernel is true when any repetition's two sides shared one
	// kernel (the local testbed): PerTunnel then holds both ends of each
	// tunnel in one slab.
	SharedKernel bool `json:"shared_kernel,omitempty"`
	// ToolPeak is tunbench's own peak resident memory during the set-up
	// (result.Scale.ToolPeakRSS), over the repetitions that recorded it.
	ToolPeak Figure `json:"tool_peak_rss_bytes,omitzero"`
	// Reconf: the effective blocked time (requests lost times the request
	// interval), the requests lost and the longest time without an answer
	// while one more tunnel was added (ReconfHow says how), over the
	// repetitions whose reconf test ran without error.
	ReconfHow     string `json:"reconf_how,omitempty"`
	ReconfBlocked Figure `json:"reconf_blocked_s,omitzero"`
	ReconfLost    Figure `json:"reconf_lost_requests,omitzero"`
	ReconfOutage  Figure `json:"reconf_outage_s,omitzero"`
}

// UnitBytes is the unit of memory figures.
const UnitBytes = "bytes"

// summarizeScale summarises the scale and reconf records of reps; nil
// when there are none.
func summarizeScale(reps []result.Cell) *ScaleSummary {
	var setup, down, p50, p99, mem, tool, blocked, lost, outage []float64
	s := &ScaleSummary{}
	seen := false
	for _, c := range reps {
		if c.Status != result.StatusOK {
			continue
		}
		if k := c.Scale; k != nil {
			seen = true
			s.Unit = k.Unit
			s.SharedKernel = s.SharedKernel || k.SharedKernel
			setup, down = append(setup, k.Setup), append(down, k.Teardown)
			if k.Adds > 0 {
				p50, p99 = append(p50, k.AddP50), append(p99, k.AddP99)
			}
			mem = append(mem, k.PerTunnel)
			if k.ToolPeakRSS > 0 {
				tool = append(tool, float64(k.ToolPeakRSS))
			}
		}
		if r := c.Reconf; r != nil && r.Error == "" {
			seen = true
			s.ReconfHow = r.How
			blocked, lost, outage = append(blocked, r.Blocked), append(lost, float64(r.Lost)), append(outage, r.Outage)
		}
	}
	if !seen {
		return nil
	}
	s.Setup, s.Teardown = FigureOf(UnitSeconds, setup), FigureOf(UnitSeconds, down)
	s.AddP50, s.AddP99 = FigureOf(UnitSeconds, p50), FigureOf(UnitSeconds, p99)
	s.PerTunnel = FigureOf(UnitBytes, mem)
	s.ToolPeak = FigureOf(UnitBytes, tool)
	s.ReconfBlocked, s.ReconfLost, s.ReconfOutage = FigureOf(UnitSeconds, blocked), FigureOf(UnitRequests, lost), FigureOf(UnitSeconds, outage)
	return s
}

// SharedKernelNote says what a shared kernel means for memory per tunnel
// wherever that figure appears
// (result.Scale.SharedKernel), as a clause.
const SharedKernelNote = "both sides ran on one kernel (the local testbed's namespaces), so its slab holds both ends " +
	"of every tunnel and memory per tunnel counts each tunnel twice, once per end"

// writeScaleTables writes the tunnels table (set-up, adds, teardown and
// memory per tunnel, for rows with scale records) and the reconf table.
func writeScaleTables(b *strings.Builder, rows []Summary, v Varying) error {
	var grid, reconf []GridRow
	shared := false
	for _, r := range rows {
		s := r.Scale
		if s == nil {
			continue
		}
		name := GridCell{Text: RowName(r, v)}
		if s.Setup.N > 0 {
			kernel := "per host"
			if s.SharedKernel {
				kernel, shared = "shared", true
			}
			grid = append(grid, GridRow{Cells: []GridCell{name, {Text: strconv.Itoa(max(r.Params.Tunnels, 1))}, {Text: OrDash(s.Unit)},
				num(s.Setup, 3, false), num(scaleFigure(s.AddP50, 1000, "ms"), 3, false), num(scaleFigure(s.AddP99, 1000, "ms"), 3, false),
				num(s.Teardown, 3, false), num(scaleFigure(s.PerTunnel, 1.0/1024, "KiB"), 1, false),
				num(scaleFigure(s.ToolPeak, 1.0/(1<<20), "MiB"), 1, false), {Text: kernel}}})
		}
		if s.ReconfBlocked.N > 0 {
			reconf = append(reconf, GridRow{Cells: []GridCell{name, {Text: strconv.Itoa(max(r.Params.Tunnels, 1))},
				num(scaleFigure(s.ReconfBlocked, 1000, "ms"), 1, false), num(s.ReconfLost, 0, false), num(scaleFigure(s.ReconfOutage, 1000, "ms"), 1, false)}})
		}
	}
	if len(grid) > 0 {
		b.WriteString("\ntunnels: set-up of all N, one tunnel's add (p50, p99), teardown, memory per tunnel, tunbench's own peak during set-up\n")
		cols := []GridColumn{{Header: "method", Left: true}, {Header: "N"}, {Header: "one tunnel is", Left: true}, {Header: "set-up s"},
			{Header: "p50 ms"}, {Header: "p99 ms"}, {Header: "teardown s"}, {Header: "KiB/tunnel"}, {Header: "tunbench MiB"}, {Header: "kernel", Left: true}}
		if err := RenderGrid(b, cols, grid); err != nil {
			return err
		}
		if shared {
			WriteWrapped(b, []string{"kernel shared: " + SharedKernelNote + "."}, "")
		}
	}
	if len(reconf) > 0 {
		b.WriteString("\nreconf: one more tunnel added while a request stream and a TCP stream cross the measured one\n")
		cols := []GridColumn{{Header: "method", Left: true}, {Header: "N"}, {Header: "blocked ms"}, {Header: "lost"},
			{Header: "outage ms"}}
		if err := RenderGrid(b, cols, reconf); err != nil {
			return err
		}
	}
	return nil
}

// scaleDefinitions explains the tunnels and reconf tables' columns when
// a row has them.
func scaleDefinitions(rows []Summary) []string {
	if !slices.ContainsFunc(rows, func(r Summary) bool { return r.Scale != nil }) {
		return nil
	}
	return []string{
		"N: tunnels set up between the two endpoints; the load crosses the middle one. set-up s and teardown s: the " +
			"method's whole set-up and teardown of the N tunnels; p50/p99 ms: one tunnel's add, from the adds' " +
			"timestamps; KiB/tunnel: (slab after set-up - slab before + the daemons' resident memory) / N, noisy on a " +
			"shared host; tunbench MiB: tunbench's own peak resident memory (VmHWM) during the set-up, the process " +
			"driving it and the remote sides' agents, not the daemons; kernel: shared when both sides' tunnels are in one kernel's slab (then each tunnel counts twice), " +
			"per host when each side has its own.",
		"blocked ms: the reconf test's effective blocked time, requests lost times the request interval (FD.io CSIT's); " +
			"lost: requests never answered; outage ms: the longest time without an answer. How the tunnel was added is in " +
			"the JSON export (reconf_how).",
	}
}
