package summary

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tunbench/tunbench/internal/bed/kind"
	"github.com/tunbench/tunbench/internal/result"
)

// EmulatedNote is said plainly wherever figures from an emulated testbed
// are shown.
const EmulatedNote = "emulated: figures measure function, not performance " +
	"(the endpoints ran in a software-emulated VM)"

// TunnelsNativeNote says what % native means for a row with more than
// one tunnel.
const TunnelsNativeNote = "% native with N tunnels: against native at one tunnel with the same other parameters " +
	"(native sets up no tunnel, so it has no N); the share a method keeps as N grows is its % native at N " +
	"over its % native at 1."

// Markers appended to figures in the table.
const (
	markUnstable = "!" // CV above 10%
	markApprox   = "~" // approximate CPU split
	markBusy     = "*" // busy background, on the method label
	markOneCore  = "^" // one core at ≥95% while the others had room, on the method label
)

// Varying says which parameters differ between rows. The underlay
// parameters become headings over groups of rows; the overlay MTU, which
// also depends on the method, becomes a column.
type Varying struct {
	Family, Underlay, overlay, Offloads, Streams, CC bool
	// Tunnels: the tunnels dimension (in headings and names as "100
	// tunnels").
	Tunnels bool
	// MSS: the MSS asked of the load tool (in headings through
	// extraParams; in sentences through describe).
	MSS bool
	// In sentences (describe) only: the offload set's name, pinning,
	// TCP direction, WAN condition and the ssh site pair.
	OffloadSet, Pin, Direction, WAN, Sites bool
}

// VaryingParams says which parameters differ between rows.
func VaryingParams(rows []Summary) Varying {
	var v Varying
	if len(rows) == 0 {
		return v
	}
	p0 := rows[0].Params
	overlay := map[string]int{} // label -> overlay MTU seen
	for _, r := range rows {
		p := r.Params
		v.Family = v.Family || p.Family != p0.Family
		v.Underlay = v.Underlay || p.UnderlayMTU != p0.UnderlayMTU
		v.Offloads = v.Offloads || p.Offloads != p0.Offloads
		v.Streams = v.Streams || p.Streams != p0.Streams
		v.CC = v.CC || p.CongestionControl != p0.CongestionControl
		v.Tunnels = v.Tunnels || TunnelCount(p) != TunnelCount(p0)
		v.MSS = v.MSS || p.MSS != p0.MSS
		v.OffloadSet = v.OffloadSet || p.OffloadSet != p0.OffloadSet
		v.Pin = v.Pin || p.Pin != p0.Pin
		v.Direction = v.Direction || p.Direction != p0.Direction
		v.WAN = v.WAN || p.WAN.Label() != p0.WAN.Label()
		v.Sites = v.Sites || p.SiteA != p0.SiteA || p.SiteB != p0.SiteB
		if m, ok := overlay[r.Label]; ok && m != p.OverlayMTU {
			v.overlay = true
		}
		overlay[r.Label] = p.OverlayMTU
	}
	v.overlay = v.overlay || v.Underlay
	return v
}

// RowName names a row unambiguously in notes: its label plus the varying
// parameters.
func RowName(r Summary, v Varying) string {
	var ps []string
	if v.Family {
		ps = append(ps, r.Params.Family)
	}
	if v.Underlay {
		ps = append(ps, fmt.Sprintf("underlay MTU %d", r.Params.UnderlayMTU))
	}
	if v.overlay {
		ps = append(ps, fmt.Sprintf("overlay MTU %d", r.Params.OverlayMTU))
	}
	if v.Offloads {
		ps = append(ps, "offloads "+OnOff(r.Params.Offloads))
	}
	if v.Streams {
		ps = append(ps, Streams(r.Params.Streams))
	}
	if v.CC {
		ps = append(ps, CCName(r.Params.CongestionControl))
	}
	if v.Tunnels {
		ps = append(ps, Tunnels(r.Params.Tunnels))
	}
	ps = append(ps, extraParams(r.Params)...)
	if len(ps) == 0 {
		return r.Label
	}
	return r.Label + " (" + strings.Join(ps, ", ") + ")"
}

// Streams names a stream count: "1 stream", "4 streams".
func Streams(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}

// Tunnels names a tunnel count: "1 tunnel", "100 tunnels" (0, in records
// older than the tunnels dimension, is one).
func Tunnels(n int) string {
	if n <= 1 {
		return "1 tunnel"
	}
	return fmt.Sprintf("%d tunnels", n)
}

// OnOff writes a switch as "on" or "off".
func OnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Warnings returns the plain-language doubts about these figures, in the
// order the table footer and the JSON export give them.
func Warnings(run result.Run, rows []Summary) []string {
	v := VaryingParams(rows)
	var (
		out                    []string
		emulated               = run.Host.IsEmulated()
		unstable, busy, approx []string
		mixed                  []string
		busyMax                float64
	)
	for _, r := range rows {
		emulated = emulated || r.Emulated
		name := RowName(r, v)
		if r.Unstable {
			unstable = append(unstable, name+" ("+strings.Join(r.UnstableFigures(), ", ")+")")
		}
		if r.BackgroundBusy {
			busy = append(busy, name)
			busyMax = max(busyMax, r.BackgroundBusyMax)
		}
		switch r.CPUSplit {
		case SplitApproximate:
			approx = append(approx, name)
		case SplitMixed:
			mixed = append(mixed, name)
		}
	}
	if emulated {
		out = append(out, EmulatedNote+".")
	}
	out = append(out, skippedNotes(run)...)
	if n := VMNote(rows); n != "" {
		out = append(out, n)
	}
	if w := pacingWarning(run, rows); w != "" {
		out = append(out, w)
	}
	if len(unstable) > 0 {
		out = append(out, fmt.Sprintf("%s unstable: the coefficient of variation over repetitions is above 10%% for %s; "+
			"treat these figures as rough, or rerun with more repetitions on a quieter machine.",
			markUnstable, strings.Join(unstable, ", ")))
	}
	if len(busy) > 0 {
		out = append(out, fmt.Sprintf("%s busy background: the machine was already up to %.1f%% busy before a repetition of %s; "+
			"its figures may be low.", markBusy, busyMax, strings.Join(busy, ", ")))
	}
	if len(approx) > 0 {
		what := strings.Join(approx, ", ")
		if len(approx) == len(rows) {
			what = "all rows"
		}
		out = append(out, fmt.Sprintf("%s approximate CPU split (%s): both ends share the same CPUs, and softirq work "+
			"cannot be attributed to one side; sender and receiver cores count only each side's processes, "+
			"and the machine-wide softirq time is in the JSON export (softirq_cores).",
			markApprox, what))
	}
	if w := oneCoreWarning(rows, v); w != "" {
		out = append(out, w)
	}
	if len(mixed) > 0 {
		out = append(out, fmt.Sprintf("%s mixed CPU split for %s: some repetitions attributed CPU per process, "+
			"others approximately.", markApprox, strings.Join(mixed, ", ")))
	}
	return out
}

// CCName names a congestion control setting in a heading or a note.
func CCName(cc string) string {
	if cc == "" {
		return "cc host default"
	}
	return "cc " + cc
}

// pacingWarning is the doubt about TCP throughput measured with BBR on
// the local testbed: BBR paces its own sending where the device has no fq
// qdisc (veth has none). On this kind of machine that held native veth
// throughput to about a third of cubic's, with the CPUs partly idle, and
// hid the difference between data paths (docs/performance.md). A row ran
// BBR when its connections reported it (Summary.Congestion), or, in
// records older than that, when the host's default was bbr and no
// algorithm was asked for.
func pacingWarning(run result.Run, rows []Summary) string {
	if e, ok := kind.Named(run.Testbed); !ok || !e.Local {
		return ""
	}
	v := VaryingParams(rows)
	var bbr []string
	for _, r := range rows {
		used := r.Congestion
		if used == "" && r.Params.CongestionControl == "" {
			used = run.Host.Sysctls["net.ipv4.tcp_congestion_control"]
		}
		if r.Throughput.N > 0 && slices.Contains(strings.Split(used, "+"), "bbr") {
			bbr = append(bbr, RowName(r, v))
		}
	}
	if len(bbr) == 0 {
		return ""
	}
	what := strings.Join(bbr, ", ")
	if len(bbr) == len(rows) {
		what = "all rows"
	}
	return "TCP congestion control bbr (" + what + "): " +
		"BBR paces its own sending where the device has no fq qdisc, and veth has none; on a veth testbed that can " +
		"hold throughput well below what the CPUs carry and hide the difference between data paths " +
		"(docs/performance.md). To compare data paths, measure with cubic (the default, or --cc cubic)."
}

// congestionLine says which TCP congestion control the figures were
// measured with, as the connections' sockets reported it: in the
// headings when it is a dimension, here otherwise.
func congestionLine(rows []Summary, v Varying) string {
	if v.CC {
		return "cc: the TCP congestion control asked for (in the headings); every connection's socket reported using it."
	}
	var used []string
	for _, r := range rows {
		for _, u := range strings.Split(r.Congestion, "+") {
			if u != "" && !slices.Contains(used, u) {
				used = append(used, u)
			}
		}
	}
	if len(used) == 0 {
		return ""
	}
	return "TCP congestion control: " + strings.Join(used, ", ") + ", as every connection's socket reported it."
}

// Definitions explain the table's columns; always printed under it.
func Definitions(v Varying) []string {
	d := []string{
		"Gbit/s: receiver throughput, mean ± half-width of the 95% confidence interval " +
			"(Student t, n-1 degrees of freedom) over the n ok repetitions; no ± when n < 2.",
		"% native: mean Gbit/s relative to method native with the same family, underlay MTU, offloads " +
			"and streams in this run; — when there is none.",
		"p50/p99 µs: round-trip time percentiles of each repetition, mean over repetitions.",
		"snd/rcv CPU: CPU time per wall second of the sender's/receiver's processes, in cores " +
			"(1.00 = one full core).",
		"Gbit/s/core: Gbit/s divided by the whole machine's busy cores during the transfer " +
			"(busy % / 100 × cores), per repetition, then averaged.",
		"n: ok repetitions / all repetitions.",
	}
	if v.overlay {
		d = append(d, "ovl MTU: MTU of the overlay (tunnel) device, in bytes; the underlay MTU is in the heading.")
	}
	if v.Tunnels {
		d = append(d, TunnelsNativeNote)
	}
	return d
}
