// Package plan orders the cells of a validated scenario into the steps a
// run executes. It is pure: the same scenario always gives the same plan,
// and a plan renders as text lines, so tests compare plans with cmp.Diff
// without touching the machine.
package plan

import (
	"fmt"
	"slices"
	"strings"

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
}

// Build expands s into steps. Combinations a method does not support
// (e.g. ipip over ipv6) are left out.
func Build(s scenario.Scenario, o Overheads) []Step {
	t := s.Times()
	type cell struct {
		key    string
		method string
		params result.Params
	}
	var cells []cell
	for _, m := range s.Methods {
		for _, f := range s.Families {
			if !supports(o.Families(m), f) {
				continue
			}
			for _, mtu := range s.MTUs {
				for _, off := range s.Offloads {
					for _, streams := range s.Streams {
						p := result.Params{
							Family:      f,
							UnderlayMTU: mtu,
							OverlayMTU:  mtu - o.Overhead(m, f),
							Offloads:    off == "on",
							Streams:     streams,
							Duration:    t.Duration.Seconds(),
							Omit:        t.Omit.Seconds(),
							Latency:     t.Latency.Seconds(),
							LatencyTool: s.LatencyTool,
							Pin:         s.Pin,
							Options:     s.Options[m],
						}
						cells = append(cells, cell{Key(m, p), m, p})
					}
				}
			}
		}
	}
	var steps []Step
	add := func(c cell, rep int) {
		steps = append(steps, Step{Index: len(steps) + 1, Key: c.key, Method: c.method, Params: c.params, Repetition: rep})
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
	k := fmt.Sprintf("%s/%s/mtu%d/offloads-%s/p%d", method, p.Family, p.UnderlayMTU, onOff(p.Offloads), p.Streams)
	if len(p.Options) > 0 {
		k += "/" + formatOptions(p.Options)
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

// Line renders a step as one line of text.
func (s Step) Line(total int) string {
	return fmt.Sprintf("%d/%d %s family=%s mtu=%d overlay_mtu=%d offloads=%s streams=%d rep=%d",
		s.Index, total, s.Method, s.Params.Family, s.Params.UnderlayMTU, s.Params.OverlayMTU,
		onOff(s.Params.Offloads), s.Params.Streams, s.Repetition)
}

// Lines renders a whole plan.
func Lines(steps []Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Line(len(steps))
	}
	return out
}

// Measured is the time the load tools run for one step: the throughput
// test including its warm-up, plus the latency test.
func (s Step) Measured() float64 {
	return s.Params.Duration + s.Params.Omit + s.Params.Latency
}
