// Package plan orders the cells of a validated scenario into the steps a
// run executes. It is pure: the same scenario always gives the same plan,
// and a plan renders as text lines, so tests compare plans with cmp.Diff
// without touching the machine.
package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tunbench/tunbench/internal/result"
	"github.com/tunbench/tunbench/internal/scenario"
)

// Overheads gives the per-packet overhead of a method for a family.
type Overheads interface {
	Overhead(method, family string) int
	Families(method string) []string
}

// Step is one measurement: one cell of the matrix, one repetition.
type Step struct {
	Index      int // 1-based position in the plan
	Key        string
	Method     string
	Params     result.Params
	Repetition int // 1-based
	// TunnelCost is the estimated set-up and teardown of one of the
	// step's tunnels, in seconds, when it has more than one (the
	// method's Scale.Cost through the catalog); 0 otherwise.
	TunnelCost float64
}

// Build expands s into steps. Combinations a method does not support
// (e.g. ipip over ipv6) are left out.
func Build(s scenario.Scenario, o Overheads) []Step {
	t := s.Times()
	type cell struct {
		key    string
		method string
		params result.Params
		cost   float64 // TunnelCost
	}
	var cells []cell
	mss := s.MSS
	if len(mss) == 0 {
		mss = []int{0}
	}
	ccs := s.CongestionControls()
	dirs := s.Directions
	if len(dirs) == 0 {
		dirs = []string{scenario.DirForward}
	}
	lineRate := 0.0
	if s.LineRate != "" {
		lineRate, _ = scenario.ParseRate(s.LineRate)
	}
	spp := 0
	if s.HasTest(scenario.TestParallel) {
		spp = s.StreamsPerProcess
	}
	tests := slices.Clone(s.Tests)
	wans := []*result.WANParams{nil}
	if len(s.WAN) > 0 {
		wans = nil
		for _, w := range s.WAN {
			v, _ := w.Parse()
			q := "tbf"
			if v.NeedsNetem() {
				q = "netem"
			}
			wans = append(wans, &result.WANParams{DelayMs: v.DelayMs, JitterMs: v.JitterMs, LossPercent: v.LossPercent, RateBps: v.RateBps, Qdisc: q})
		}
	}
	var udp *result.UDPParams
	if s.HasTest(scenario.TestUDPSizes) {
		udp = &result.UDPParams{FrameSizes: slices.Clone(s.UDP.Sizes), Rate: s.UDP.Rate, Fragment: s.UDP.Fragment,
			SearchSteps: s.UDP.SearchSteps}
		if d, err := time.ParseDuration(s.UDP.Trial); err == nil {
			udp.Trial = d.Seconds()
		}
		if r := s.UDP.Rate; r != scenario.UDPUnlimited && r != scenario.UDPSearch {
			udp.Rate = "fixed"
			udp.OfferedBitsPerSecond, _ = scenario.ParseRate(r)
		}
	}
	for _, m := range s.Methods {
		for _, f := range s.Families {
			if !supports(o.Families(m), f) {
				continue
			}
			for _, mtu := range s.MTUs {
				for _, off := range s.Offloads {
					for _, wan := range wans {
						for _, dir := range dirs {
							for _, seg := range mss {
								for _, cc := range ccs {
									for _, streams := range s.Streams {
										for _, tunnels := range s.TunnelCounts() {
											if tunnels > 1 && oneTunnel(o, m, f, s.Options[m]) {
												continue
											}
											p := result.Params{
												Family:            f,
												UnderlayMTU:       mtu,
												OverlayMTU:        mtu - o.Overhead(m, f),
												Offloads:          off != "off",
												Streams:           streams,
												Duration:          t.Duration.Seconds(),
												Omit:              t.Omit.Seconds(),
												Latency:           t.Latency.Seconds(),
												LatencyTool:       s.LatencyTool,
												Pin:               s.Pin,
												Options:           s.Options[m],
												Tests:             tests,
												Direction:         dir,
												MSS:               seg,
												CongestionControl: cc,
												StreamsPerProcess: spp,
												LineRate:          lineRate,
												UDP:               udp,
												WAN:               wan,
											}
											if s.HasTest(scenario.TestRecover) {
												p.RecoverDown = s.Recover.DownTime().Seconds()
											}
											if set, ok := s.OffloadSet(off); ok && off != "on" && off != "off" {
												p.OffloadSet, p.OffloadFeatures = off, set
											}
											var cost float64
											if s.Spread && spp > 0 {
												p.Spread = true
											}
											if tunnels > 1 {
												p.Tunnels = tunnels
												cost = tunnelCost(o, m, f, s.Options[m])
											}
											cells = append(cells, cell{Key(m, p), m, p, cost})
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	// On a testbed whose endpoints are sites (ssh hosts, a cluster's
	// nodes) every cell runs between each chosen ordered pair of sites,
	// which the testbed names (a catalog that knows the testbeds).
	var pairs [][2]string
	if bc, ok := o.(scenario.BedCatalog); ok {
		pairs = s.SitePairs(bc)
	}
	if len(pairs) > 0 {
		var sited []cell
		for _, c := range cells {
			for _, pr := range pairs {
				p := c.params
				p.SiteA, p.SiteB = pr[0], pr[1]
				sited = append(sited, cell{Key(c.method, p), c.method, p, c.cost})
			}
		}
		cells = sited
	}
	var steps []Step
	add := func(c cell, rep int) {
		steps = append(steps, Step{Index: len(steps) + 1, Key: c.key, Method: c.method, Params: c.params, Repetition: rep, TunnelCost: c.cost})
	}
	if s.Order == "grouped" {
		for _, c := range cells {
			for rep := 1; rep <= s.Repetitions; rep++ {
				add(c, rep)
			}
		}
	} else {
		for rep := 1; rep <= s.Repetitions; rep++ {
			for _, c := range cells {
				add(c, rep)
			}
		}
	}
	return steps
}

// oneTunnel reports whether method m sets up one tunnel only in family f
// (scenario.OneTunnelOnly): it is left out of the sweep's counts above
// one, as a family a method lacks is, when o knows the methods' scale.
func oneTunnel(o Overheads, m, f string, opts map[string]string) bool {
	c, ok := o.(scenario.Catalog)
	return ok && scenario.OneTunnelOnly(c, m, f, opts)
}

func supports(fs []string, f string) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// Key identifies a cell across repetitions: method and every parameter
// that changes what is measured.
func Key(method string, p result.Params) string {
	k := fmt.Sprintf("%s/%s/mtu%d/offloads-%s/p%d", method, p.Family, p.UnderlayMTU, offloadsName(p), p.Streams)
	if p.Direction != "" && p.Direction != scenario.DirForward {
		k += "/" + p.Direction
	}
	if p.MSS > 0 {
		k += fmt.Sprintf("/mss%d", p.MSS)
	}
	if p.Tunnels > 1 {
		k += fmt.Sprintf("/tunnels%d", p.Tunnels)
	}
	if p.Spread {
		k += "/spread"
	}
	if p.CongestionControl != "" {
		k += "/cc-" + p.CongestionControl
	}
	if p.WAN != nil {
		k += "/wan-" + p.WAN.Label()
	}
	if len(p.Options) > 0 {
		k += "/" + formatOptions(p.Options)
	}
	if p.SiteA != "" {
		k += "/" + p.SiteA + ">" + p.SiteB
	}
	return k
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func formatOptions(o map[string]string) string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+o[k])
	}
	return strings.Join(parts, ",")
}

// Line renders a step as one line of text. Direction and MSS appear only
// when they differ from the default (forward, the kernel's MSS), the
// congestion control when one is set.
func (s Step) Line(total int) string {
	extra := ""
	if d := s.Params.Direction; d != "" && d != scenario.DirForward {
		extra += " direction=" + d
	}
	if s.Params.MSS > 0 {
		extra += fmt.Sprintf(" mss=%d", s.Params.MSS)
	}
	if s.Params.Tunnels > 1 {
		extra += fmt.Sprintf(" tunnels=%d", s.Params.Tunnels)
	}
	if s.Params.Spread {
		extra += " spread=on"
	}
	if cc := s.Params.CongestionControl; cc != "" {
		extra += " cc=" + cc
	}
	if s.Params.WAN != nil {
		extra += " wan=" + s.Params.WAN.Label()
	}
	return fmt.Sprintf("%d/%d %s family=%s mtu=%d overlay_mtu=%d offloads=%s streams=%d%s rep=%d",
		s.Index, total, s.Method, s.Params.Family, s.Params.UnderlayMTU, s.Params.OverlayMTU,
		offloadsName(s.Params), s.Params.Streams, extra, s.Repetition)
}

// Lines renders a whole plan.
func Lines(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Line(len(steps))
	}
	return out
}

// Measured is the time the load tools run for one step: each test's
// planned duration, warm-up included. Records without a test list ran
// tcp_stream and tcp_rr.
func (s Step) Measured() float64 {
	p := s.Params
	tests := p.Tests
	if len(tests) == 0 {
		tests = []string{scenario.TestTCPStream, scenario.TestTCPRR}
	}
	var sum float64
	for _, t := range tests {
		switch t {
		case scenario.TestTCPStream, scenario.TestParallel:
			sum += p.Duration + p.Omit
		case scenario.TestTCPRR:
			sum += p.Latency
		case scenario.TestLatencyUnderLoad:
			// Idle, then loaded after the load's warm-up.
			sum += 2*p.Latency + p.Omit + loadedLead
		case scenario.TestMTUProbe:
			sum += mtuProbeSeconds
		case scenario.TestConnect:
			sum += connectSeconds
		case scenario.TestRecover:
			sum += p.RecoverDown + recoverSeconds
		case scenario.TestReconf:
			sum += p.Duration + reconfSeconds
		case scenario.TestUDPSizes:
			if u := p.UDP; u != nil {
				per := p.Duration
				if u.Rate == scenario.UDPSearch {
					// One unlimited trial, then each search's halvings.
					per = p.Duration + float64(2*u.SearchSteps)*u.Trial
				}
				sum += per * float64(len(u.FrameSizes))
			}
		}
	}
	return sum
}

// mtuProbeSeconds is the planned time of mtu_probe: a dozen pings and a
// 2-second TCP transfer.
const mtuProbeSeconds = 4

// connectSeconds is the planned time of connect beyond the method's
// set-up, which every step has: starting the echo server and the probe's
// first answer.
const connectSeconds = 0.5

// recoverSeconds is the planned time of recover beyond the down time:
// the stream's lead (1 s), recovery and tail (about 1 s), and the rekey
// stream of the methods that rekey (lead, 2 s, tail).
const recoverSeconds = 6

// reconfSeconds is the planned time of reconf beyond its duration (the
// throughput and request streams run for the cell's duration): starting
// the servers, the request stream's tail and its stragglers.
const reconfSeconds = 1

// loadedLead is how long the load of latency_under_load runs before the
// loaded latency measurement starts, on top of its warm-up (seconds).
const loadedLead = 1

// LoadedLead is loadedLead as a duration for the runner.
const LoadedLead = loadedLead

// StepOverhead is the estimated time a step spends outside the load
// tools: building the namespaces, setting the method up, sampling the idle
// machine, tearing down. Measured on this project's 2-core machine for the
// kernel methods (docs/performance.md); userspace daemons take longer.
const StepOverhead = 1.5

// Estimate is the planned duration of a whole plan in seconds: every
// step's load-tool time plus StepOverhead, plus the estimated set-up and
// teardown of a scaled step's tunnels (TunnelsEstimate).
func Estimate(steps []Step) float64 {
	var sum float64
	for _, st := range steps {
		sum += st.Measured() + StepOverhead
	}
	return sum + TunnelsEstimate(steps)
}

// TunnelsEstimate is the estimated time, in seconds, the steps of more
// than one tunnel (the tunnels dimension) spend setting up and tearing
// down their tunnels: each tunnel at its step's TunnelCost.
func TunnelsEstimate(steps []Step) float64 {
	var sum float64
	for _, st := range steps {
		if n := st.Params.Tunnels; n > 1 {
			sum += float64(n) * st.TunnelCost
		}
	}
	return sum
}

// DefaultTunnelCost is the estimated set-up and teardown of one tunnel,
// in seconds, when the plan's catalog gives none (method.DefaultTunnelCost).
const DefaultTunnelCost = 0.025

// tunnelCost is the estimated set-up and teardown of one of method m's
// tunnels in family f with opts, in seconds: what the method's own Scale
// says (scenario.TunnelCostCatalog), or DefaultTunnelCost.
func tunnelCost(o Overheads, m, f string, opts map[string]string) float64 {
	if c, ok := o.(scenario.TunnelCostCatalog); ok {
		return c.TunnelCost(m, f, opts)
	}
	return DefaultTunnelCost
}

// Cells returns one step per cell (its first repetition), in plan order.
func Cells(steps []Step) []Step {
	seen := map[string]bool{}
	var out []Step
	for _, st := range steps {
		if !seen[st.Key] {
			seen[st.Key] = true
			out = append(out, st)
		}
	}
	return out
}

// CellLine renders a cell without its position and repetition, as
// "tunbench run --dry-run" prints it.
func (s Step) CellLine() string {
	line := s.Line(0)
	line = line[strings.IndexByte(line, ' ')+1:]
	return line[:strings.LastIndex(line, " rep=")]
}

// offloadsName is "on", "off" or the feature set's name.
func offloadsName(p result.Params) string {
	if p.OffloadSet != "" {
		return p.OffloadSet
	}
	return onOff(p.Offloads)
}
