package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Reference is a scenario's published figures: what a paper reports for a
// method under a condition, so the report can set the paper's number
// beside tunbench's (docs/scenario.md, "reference").
type Reference struct {
	// Source names the publication the figures come from.
	Source  string            `yaml:"source" json:"source"`
	Figures []ReferenceFigure `yaml:"figures" json:"figures"`
}

// ReferenceFigure is one published number. Method, Test and Metric say
// what it is; the condition fields (Family to Frame) select the cells it
// applies to, as the matrix keys them: a field left out matches every
// value of that dimension, so a figure without streams applies to each
// stream count the run measured.
type ReferenceFigure struct {
	Method string  `yaml:"method" json:"method"`
	Test   string  `yaml:"test" json:"test"`
	Metric string  `yaml:"metric" json:"metric"`
	Value  float64 `yaml:"value" json:"value"`
	Unit   string  `yaml:"unit" json:"unit"`

	Family string `yaml:"family,omitempty" json:"family,omitempty"`
	MTU    int    `yaml:"mtu,omitempty" json:"mtu,omitempty"` // underlay MTU
	// BaseMTU is the underlay MTU an mtu_gain is relative to (MTU is the
	// one it is of).
	BaseMTU   int    `yaml:"base_mtu,omitempty" json:"base_mtu,omitempty"`
	Offloads  string `yaml:"offloads,omitempty" json:"offloads,omitempty"`
	Streams   int    `yaml:"streams,omitempty" json:"streams,omitempty"`
	MSS       int    `yaml:"mss,omitempty" json:"mss,omitempty"`
	Direction string `yaml:"direction,omitempty" json:"direction,omitempty"`
	// Frame is the udp_sizes frame size the figure is for.
	Frame int `yaml:"frame,omitempty" json:"frame,omitempty"`

	// Setup says where the paper measured (its testbed), Cite where in
	// the paper the number stands (figure, table, section), Quote the
	// paper's own words when it gives the number approximately.
	Setup string `yaml:"setup,omitempty" json:"setup,omitempty"`
	Cite  string `yaml:"cite" json:"cite"`
	Quote string `yaml:"quote,omitempty" json:"quote,omitempty"`

	// Testbed is the class of the paper's testbed (see the Testbed*
	// constants). Absolute values are judged against ours only when it is
	// the class of the run's own testbed; across classes only the shape
	// (each method relative to native, the ranking) carries over.
	Testbed string `yaml:"testbed,omitempty" json:"testbed,omitempty"`
	// Native is the paper's native figure in the same condition and
	// setup, in Unit, where the block has no native figure of its own for
	// them (a native figure of the block with the same setup, test,
	// metric and condition is used otherwise); the report sets the
	// paper's value as % of it beside ours as % of our native.
	Native float64 `yaml:"native,omitempty" json:"native,omitempty"`
	// Implementation is the data path the paper's method ran on, as
	// result.Meta.Datapath names it ("kernel", "netdev", "libipsec",
	// "userspace"); a run whose row ran on another one is not judged
	// against it.
	Implementation string `yaml:"implementation,omitempty" json:"implementation,omitempty"`
}

// Testbed classes of a reference figure (ReferenceFigure.Testbed).
const (
	TestbedWANVM      = "wan-vm"      // VMs in two data centres over a WAN
	TestbedDCVM       = "dc-vm"       // VMs in one data centre
	TestbedBareMetal  = "bare-metal"  // servers with their own NICs
	TestbedLocalVM    = "local-vm"    // VMs on one host, virtio between them
	TestbedOneMachine = "one-machine" // namespaces on one machine (veth)
)

// TestbedClasses are the valid ReferenceFigure.Testbed values.
var TestbedClasses = []string{TestbedWANVM, TestbedDCVM, TestbedBareMetal, TestbedLocalVM, TestbedOneMachine}

// Datapaths are the valid ReferenceFigure.Implementation values.
var Datapaths = []string{"kernel", "netdev", "libipsec", "userspace"}

// Reference metric names.
const (
	MetricThroughput      = "throughput"
	MetricPeakThroughput  = "peak_throughput"
	MetricPercentNative   = "percent_of_native"
	MetricPercentLineRate = "percent_of_line_rate"
	MetricP50RTT          = "p50_rtt"
	MetricP99RTT          = "p99_rtt"
	MetricPacketsPerSec   = "packets_per_second"
	MetricDelayP50        = "delay_p50"
	MetricJitter          = "jitter"
	MetricLoss            = "loss"
	// MetricMTUGain is a method's throughput at underlay MTU mtu over its
	// throughput at base_mtu, all else equal: the jumbo-frame gain.
	MetricMTUGain = "mtu_gain"
)

// ReferenceMetrics are the metrics a reference figure may name, per test.
var ReferenceMetrics = map[string][]string{
	TestTCPStream: {MetricThroughput, MetricPercentNative, MetricMTUGain},
	TestTCPRR:     {MetricP50RTT, MetricP99RTT},
	// peak_throughput is the highest mean over the run's stream counts.
	TestParallel: {MetricThroughput, MetricPeakThroughput, MetricPercentNative, MetricPercentLineRate},
	TestUDPSizes: {MetricThroughput, MetricPacketsPerSec, MetricDelayP50, MetricJitter, MetricLoss},
}

// referenceUnits are the units each metric may be given in, each with
// its factor to the metric's base unit (the first: the unit the report
// shows it in).
var referenceUnits = map[string][]struct {
	Name   string
	Factor float64
}{
	MetricThroughput:      {{"Gbit/s", 1}, {"Mbit/s", 1e-3}},
	MetricPeakThroughput:  {{"Gbit/s", 1}, {"Mbit/s", 1e-3}},
	MetricPercentNative:   {{"%", 1}},
	MetricPercentLineRate: {{"%", 1}},
	MetricP50RTT:          {{"us", 1}, {"ms", 1e3}},
	MetricP99RTT:          {{"us", 1}, {"ms", 1e3}},
	MetricPacketsPerSec:   {{"packets/s", 1}, {"Mpackets/s", 1e6}},
	MetricDelayP50:        {{"us", 1}, {"ms", 1e3}},
	MetricJitter:          {{"us", 1}, {"ms", 1e3}},
	MetricLoss:            {{"%", 1}},
	MetricMTUGain:         {{"x", 1}},
}

// BaseValue is the figure's value in its metric's base unit (Gbit/s, %,
// us, packets/s) and that unit; Validate has checked the unit.
func (f ReferenceFigure) BaseValue() (float64, string) {
	us := referenceUnits[f.Metric]
	for _, u := range us {
		if u.Name == f.Unit {
			return f.Value * u.Factor, us[0].Name
		}
	}
	return f.Value, f.Unit
}

func unitNames(metric string) []string {
	var out []string
	for _, u := range referenceUnits[metric] {
		out = append(out, u.Name)
	}
	return out
}

// validateReference checks the reference block: every name known, every
// unit one its metric takes, every condition in range. A figure for a
// method or condition the run does not measure is not an error (flags
// may narrow a paper's scenario): the report says it was not measured.
func (s Scenario) validateReference(names []string, bad func(field, format string, args ...any)) {
	r := s.Reference
	if r == nil {
		return
	}
	if strings.TrimSpace(r.Source) == "" {
		bad("reference.source", "empty: name the publication the figures come from, e.g. \"seed 000: Kannan et al., Benchmarking tunnel and encryption methodologies in cloud environments\"")
	}
	if len(r.Figures) == 0 {
		bad("reference.figures", "empty: list the published figures, or drop the reference block")
	}
	tests := slices.Sorted(func(yield func(string) bool) {
		for t := range ReferenceMetrics {
			if !yield(t) {
				return
			}
		}
	})
	for i, f := range r.Figures {
		field := func(name string) string { return fmt.Sprintf("reference.figures[%d].%s", i, name) }
		if !slices.Contains(names, f.Method) {
			bad(field("method"), "unknown method %q: valid methods are %s", f.Method, strings.Join(names, ", "))
		}
		metrics, ok := ReferenceMetrics[f.Test]
		switch {
		case !ok:
			bad(field("test"), "%q: published figures can be set beside the tests %s", f.Test, strings.Join(tests, ", "))
		case !slices.Contains(metrics, f.Metric):
			bad(field("metric"), "unknown metric %q for test %s: use %s", f.Metric, f.Test, strings.Join(metrics, ", "))
		case !slices.Contains(unitNames(f.Metric), f.Unit):
			bad(field("unit"), "%q: give %s in %s", f.Unit, f.Metric, strings.Join(unitNames(f.Metric), " or "))
		}
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) || f.Value <= 0 {
			bad(field("value"), "%v: give the published number, above 0", f.Value)
		}
		if f.Testbed != "" && !slices.Contains(TestbedClasses, f.Testbed) {
			bad(field("testbed"), "unknown testbed class %q: use %s", f.Testbed, strings.Join(TestbedClasses, ", "))
		}
		if f.Implementation != "" && !slices.Contains(Datapaths, f.Implementation) {
			bad(field("implementation"), "unknown data path %q: use %s", f.Implementation, strings.Join(Datapaths, ", "))
		}
		if math.IsNaN(f.Native) || math.IsInf(f.Native, 0) || f.Native < 0 {
			bad(field("native"), "%v: give the paper's native figure in the figure's unit, above 0, or leave it out", f.Native)
		}
		if f.Family != "" && f.Family != "ipv4" && f.Family != "ipv6" {
			bad(field("family"), "unknown family %q: use ipv4 or ipv6, or leave it out to match both", f.Family)
		}
		if f.MTU != 0 && (f.MTU < 576 || f.MTU > 65535) {
			bad(field("mtu"), "underlay MTU %d out of range: use 576 to 65535, or leave it out", f.MTU)
		}
		switch {
		case f.Metric == MetricMTUGain && (f.MTU == 0 || f.BaseMTU == 0 || f.MTU == f.BaseMTU):
			bad(field("base_mtu"), "mtu_gain needs mtu (the MTU the gain is of) and base_mtu (the one it is relative to), different")
		case f.Metric != MetricMTUGain && f.BaseMTU != 0:
			bad(field("base_mtu"), "base_mtu belongs to metric mtu_gain: drop it")
		case f.BaseMTU != 0 && (f.BaseMTU < 576 || f.BaseMTU > 65535):
			bad(field("base_mtu"), "underlay MTU %d out of range: use 576 to 65535", f.BaseMTU)
		}
		if f.Offloads != "" && f.Offloads != "on" && f.Offloads != "off" {
			if _, ok := s.OffloadSet(f.Offloads); !ok {
				bad(field("offloads"), "unknown value %q: use on, off or a feature set: %s", f.Offloads, strings.Join(s.offloadSetNames(), ", "))
			}
		}
		if f.Streams < 0 || f.Streams > MaxStreams {
			bad(field("streams"), "%d: use 1 to %d, or leave it out", f.Streams, MaxStreams)
		}
		if f.MSS != 0 && (f.MSS < MinMSS || f.MSS > 65495) {
			bad(field("mss"), "MSS %d out of range: use %d to 65495, or leave it out", f.MSS, MinMSS)
		}
		if f.Direction != "" && f.Direction != DirForward && f.Direction != DirReverse && f.Direction != DirBidir {
			bad(field("direction"), "unknown direction %q: use forward, reverse or bidir", f.Direction)
		}
		switch {
		case f.Frame != 0 && f.Test != TestUDPSizes:
			bad(field("frame"), "a frame size belongs to test udp_sizes: drop frame or set test: udp_sizes")
		case f.Frame < 0 || f.Frame > 65535:
			bad(field("frame"), "%d: a frame size from 64 to 65535", f.Frame)
		case f.Test == TestUDPSizes && f.Frame == 0:
			bad(field("frame"), "missing: give the frame size the figure is for, e.g. 1514")
		}
		if f.Test == TestParallel && f.Metric == MetricPeakThroughput && f.Streams != 0 {
			bad(field("streams"), "peak_throughput is the highest over every stream count: drop streams, or use metric throughput at that count")
		}
		if strings.TrimSpace(f.Cite) == "" {
			bad(field("cite"), "empty: say where the number stands in the source, e.g. \"Fig. 15a\" or \"Table 2\"")
		}
	}
}

// SkippedMethod is a method a run left out because the machine cannot
// carry it (tunbench run --skip-unavailable), with the reason.
type SkippedMethod struct {
	Method string `yaml:"method" json:"method"`
	Reason string `yaml:"reason" json:"reason"`
}

// validateSkipped checks the methods a run skipped: known, not also
// measured, each with its reason.
func (s Scenario) validateSkipped(names []string, bad func(field, format string, args ...any)) {
	for i, k := range s.Skipped {
		field := fmt.Sprintf("skipped[%d]", i)
		switch {
		case !slices.Contains(names, k.Method):
			bad(field+".method", "unknown method %q: valid methods are %s", k.Method, strings.Join(names, ", "))
		case slices.Contains(s.Methods, k.Method):
			bad(field+".method", "%s is in methods too: a method is measured or skipped, not both", k.Method)
		}
		if strings.TrimSpace(k.Reason) == "" {
			bad(field+".reason", "empty: say why %s was not measured", k.Method)
		}
	}
}

// SkipMethods returns the scenario without the methods in skip (and
// their options), recording each with its reason in Skipped.
func (s Scenario) SkipMethods(skip []SkippedMethod) Scenario {
	for _, k := range skip {
		if !slices.Contains(s.Methods, k.Method) {
			continue
		}
		s.Methods = slices.DeleteFunc(slices.Clone(s.Methods), func(m string) bool { return m == k.Method })
		if _, ok := s.Options[k.Method]; ok {
			opts := make(map[string]map[string]string, len(s.Options))
			for m, o := range s.Options {
				if m != k.Method {
					opts[m] = o
				}
			}
			s.Options = opts
		}
		s.Skipped = append(slices.Clip(s.Skipped), k)
	}
	return s
}
