// Package scenario turns a YAML benchmark description into a typed,
// validated matrix. It is pure: it reads no files and touches nothing on
// the machine; the caller passes the bytes and a Catalog describing the
// methods that exist.
//
// Every validation error names the field and says how to fix it, so bad
// input is refused before anything is created.
//
// It names no testbed: a testbed's own section of the document (ssh:,
// kubernetes:) is kept raw (Section), and what the scenario's testbed
// checks, decodes and allows comes from the catalog (BedCatalog), which
// the testbed registry (internal/bed/registry) fills from each testbed's
// folder.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// Scenario is a benchmark matrix: every combination of methods, families,
// MTUs, offload states and stream counts, each measured Repetitions times.
type Scenario struct {
	Name string `yaml:"name" json:"name"`
	// Testbed names where the endpoints live: one of the testbeds of
	// internal/bed/registry ("local", the default, "vm", "ssh",
	// "kubernetes"), which validation asks through the catalog.
	Testbed string `yaml:"testbed" json:"testbed"`
	// Sections are the testbeds' own parts of the scenario, by their
	// top-level key (the hosts of ssh:, the cluster of kubernetes:):
	// kept as the document gave them and decoded by the testbed's
	// folder (Section).
	Sections map[string]*Section `yaml:"-" json:"-"`
	// Kernel and Modules select the guest kernel for testbed "vm"; empty
	// Kernel means the Debian stock kernel package fetched into the cache.
	Kernel  string `yaml:"kernel,omitempty" json:"kernel,omitempty"`
	Modules string `yaml:"modules,omitempty" json:"modules,omitempty"`

	Methods  []string `yaml:"methods" json:"methods"`
	Families []string `yaml:"families" json:"families"`
	MTUs     []int    `yaml:"mtus" json:"mtus"`
	Offloads []string `yaml:"offloads" json:"offloads"` // "on", "off" or a named feature set
	// OffloadSets are named device feature sets (feature -> on/off, as
	// ethtool -K names them) that offloads may list, beside the built-in
	// BuiltinOffloadSets.
	OffloadSets map[string]map[string]string `yaml:"offload_sets,omitempty" json:"offload_sets,omitempty"`
	Streams     []int                        `yaml:"streams" json:"streams"`
	// Tunnels is a matrix dimension: how many tunnels each method sets up
	// between the two endpoints (a mesh's cost: set-up time, memory, the
	// lookup on every packet), the load crossing one of them. Empty means
	// one (TunnelCounts).
	Tunnels []int `yaml:"tunnels,omitempty" json:"tunnels,omitempty"`

	Duration string `yaml:"duration" json:"duration"` // throughput test length, e.g. "10s"
	Omit     string `yaml:"omit" json:"omit"`         // warm-up excluded from the figures
	Latency  string `yaml:"latency" json:"latency"`   // request/response test length; "0s" skips it
	// LatencyTool drives the request/response test: "rr" (tunbench's own
	// TCP_RR-style client, IPv4 and IPv6) or "sockperf" (IPv4 only).
	LatencyTool string `yaml:"latency_tool" json:"latency_tool"`
	Repetitions int    `yaml:"repetitions" json:"repetitions"`
	// Order is "interleave" (each repetition round visits every cell, so
	// drift on a shared machine hits all methods alike) or "grouped".
	Order string `yaml:"order" json:"order"`
	Pin   bool   `yaml:"pin" json:"pin"`

	// Options are per-method settings: options: {vxlan: {vni: "7"}}.
	Options map[string]map[string]string `yaml:"options,omitempty" json:"options,omitempty"`

	// Tests are the measurements run in every cell, in this order (see
	// the Test* constants and docs/measurement.md).
	Tests []string `yaml:"tests" json:"tests"`
	// Directions is a matrix dimension of the TCP tests: forward (a sends),
	// reverse (b sends, iperf3 -R) or bidir (both at once, iperf3 --bidir).
	Directions []string `yaml:"direction" json:"direction"`
	// MSS is a matrix dimension: the TCP maximum segment size the load
	// tool asks for (iperf3 -M); empty leaves the kernel's choice.
	MSS []int `yaml:"mss,omitempty" json:"mss,omitempty"`
	// CongestionControl is a matrix dimension: the TCP congestion control
	// algorithms to measure with (cubic, bbr, reno, ...). Empty means
	// DefaultCongestionControl on the local and vm testbeds (set inside
	// tunbench's own namespaces) and the hosts' own default on ssh; see
	// CongestionControls.
	CongestionControl []string `yaml:"congestion_control,omitempty" json:"congestion_control,omitempty"`
	// StreamsPerProcess is how the parallel test spreads its streams over
	// iperf3 processes: 128 (iperf3's limit, seed 000 Fig. 6) or 1 (one
	// process per stream, Fig. 15).
	StreamsPerProcess int `yaml:"streams_per_process" json:"streams_per_process"`
	// Spread spreads the parallel test's iperf3 processes over as many
	// tunnels of the tunnels dimension, one each (SpreadTunnels), instead
	// of sending them all through the measured one.
	Spread bool `yaml:"spread,omitempty" json:"spread,omitempty"`
	// LineRate is the link speed of the underlay when the device cannot
	// tell (veth): "25G", "10G", "100M"; empty means unknown.
	LineRate string `yaml:"line_rate,omitempty" json:"line_rate,omitempty"`
	// UDP configures the udp_sizes test.
	UDP UDP `yaml:"udp" json:"udp"`
	// Recover configures the recover test.
	Recover Recover `yaml:"recover" json:"recover"`
	// WAN is a matrix dimension: emulated wide-area conditions on the
	// underlay (netem for delay, jitter and loss; tbf for a rate alone).
	// Empty means none.
	WAN []WAN `yaml:"wan,omitempty" json:"wan,omitempty"`

	// Reference holds a paper's published figures, which the report sets
	// beside the run's own (see Reference).
	Reference *Reference `yaml:"reference,omitempty" json:"reference,omitempty"`
	// Skipped are the methods "tunbench run --skip-unavailable" left out
	// because this machine cannot carry them, each with the reason: the
	// stored scenario of a run records them so the report can name them.
	Skipped []SkippedMethod `yaml:"skipped,omitempty" json:"skipped,omitempty"`
}

// WAN is one emulated wide-area condition, applied on the egress of both
// underlay devices: delay and jitter are one-way (the RTT grows by twice
// the delay), loss applies in each direction.
type WAN struct {
	Delay  string `yaml:"delay,omitempty" json:"delay,omitempty"`   // e.g. 40ms
	Jitter string `yaml:"jitter,omitempty" json:"jitter,omitempty"` // e.g. 2ms; needs delay
	Loss   string `yaml:"loss,omitempty" json:"loss,omitempty"`     // e.g. 0.1%
	Rate   string `yaml:"rate,omitempty" json:"rate,omitempty"`     // e.g. 1G
}

// WANValues are a WAN's parsed values: milliseconds, percent, bit/s.
type WANValues struct {
	DelayMs, JitterMs, LossPercent, RateBps float64
}

// Parse reads the fields; Validate has checked them.
func (w WAN) Parse() (WANValues, error) {
	var v WANValues
	ms := func(field, s string) (float64, error) {
		if s == "" {
			return 0, nil
		}
		d, err := parseDuration(s)
		if err != nil || d < 0 || d > time.Minute {
			return 0, fmt.Errorf("%s %q: a duration from 0 to 1m, e.g. 40ms", field, s)
		}
		return float64(d) / float64(time.Millisecond), nil
	}
	var err error
	if v.DelayMs, err = ms("delay", w.Delay); err != nil {
		return v, err
	}
	if v.JitterMs, err = ms("jitter", w.Jitter); err != nil {
		return v, err
	}
	if v.JitterMs > 0 && v.DelayMs == 0 {
		return v, fmt.Errorf("jitter %s without delay: netem varies a delay, give delay too", w.Jitter)
	}
	if w.Loss != "" {
		l, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(w.Loss), "%"), 64)
		if err != nil || l < 0 || l > 100 {
			return v, fmt.Errorf("loss %q: a percentage from 0 to 100, e.g. 0.1%%", w.Loss)
		}
		v.LossPercent = l
	}
	if w.Rate != "" {
		if v.RateBps, err = ParseRate(w.Rate); err != nil {
			return v, err
		}
	}
	if v == (WANValues{}) {
		return v, errors.New("empty: give delay, jitter, loss or rate")
	}
	return v, nil
}

// NeedsNetem reports whether the condition needs netem (delay, jitter or
// loss); a rate alone is shaped by tbf.
func (v WANValues) NeedsNetem() bool { return v.DelayMs > 0 || v.JitterMs > 0 || v.LossPercent > 0 }

// UDP configures the udp_sizes test (seed 002's packet-size sweep).
type UDP struct {
	// Sizes are Ethernet frame sizes in bytes as seed 002 gives them
	// (header included, FCS excluded: 1514 is a full 1500-byte packet).
	// The UDP payload is the frame less 14 (Ethernet), the inner IP header
	// (20 or 40) and 8 (UDP).
	Sizes []int `yaml:"sizes" json:"sizes"`
	// Rate is "unlimited" (send as fast as possible: find the rate), a
	// fixed offered payload rate such as "1G", or "search" (the no-drop
	// and partial-drop rates, NDR and PDR, by binary search).
	Rate string `yaml:"rate" json:"rate"`
	// Fragment allows sizes above the overlay MTU (measured fragmented);
	// without it they are refused.
	Fragment bool `yaml:"fragment" json:"fragment"`
	// Trial is the length of one search trial; SearchSteps the halvings
	// after the first trial at the unlimited rate.
	Trial       string `yaml:"trial" json:"trial"`
	SearchSteps int    `yaml:"search_steps" json:"search_steps"`
}

// Recover configures the recover test: Down is how long side a's
// underlay device stays down (a Go duration, default 2s).
type Recover struct {
	Down string `yaml:"down" json:"down"`
}

// DownTime is Down parsed; Validate has checked it.
func (r Recover) DownTime() time.Duration {
	d, _ := parseDuration(r.Down)
	return d
}

// MaxRecoverDown is the longest down time the recover test takes.
const MaxRecoverDown = 5 * time.Minute

// UDP rate modes.
const (
	UDPUnlimited = "unlimited"
	UDPSearch    = "search"
)

// PDRLossPercent is the loss the partial-drop rate allows.
const PDRLossPercent = 0.5

// SeedUDPFrames are seed 002's frame sizes.
var SeedUDPFrames = []int{64, 128, 256, 384, 512, 640, 768, 896, 1024, 1153, 1280, 1408, 1514}

// UDPPayload is the UDP payload of an Ethernet frame of frame bytes
// carrying family's IP header.
func UDPPayload(frame int, family string) int {
	ip := 20
	if family == "ipv6" {
		ip = 40
	}
	return frame - 14 - ip - 8
}

// UDPHeaderBytes is the smallest payload tunbench's UDP generator sends.
const UDPHeaderBytes = 20

// Names of the tests a scenario can ask for.
const (
	TestTCPStream        = "tcp_stream"
	TestTCPRR            = "tcp_rr"
	TestParallel         = "parallel"
	TestLatencyUnderLoad = "latency_under_load"
	TestUDPSizes         = "udp_sizes"
	TestMTUProbe         = "mtu_probe"
	TestConnect          = "connect"
	TestRecover          = "recover"
	TestReconf           = "reconf"
)

// Tests lists every test name, in the order they are documented.
var Tests = []string{TestTCPStream, TestTCPRR, TestParallel, TestLatencyUnderLoad, TestUDPSizes, TestMTUProbe, TestConnect, TestRecover, TestReconf}

// Directions of the TCP tests.
const (
	DirForward = "forward"
	DirReverse = "reverse"
	DirBidir   = "bidir"
)

// MaxStreams is the most streams the parallel test spreads over
// processes; tcp_stream runs one iperf3 process and takes at most
// MaxStreamsPerProcess.
const (
	MaxStreams           = 4096
	MaxStreamsPerProcess = 128
)

// HasTest reports whether the scenario runs test t.
func (s Scenario) HasTest(t string) bool { return slices.Contains(s.Tests, t) }

// Catalog is what validation needs to know about methods.
type Catalog interface {
	// Names lists the valid method names.
	Names() []string
	// Overhead returns the bytes per packet method adds for family.
	Overhead(method, family string) int
	// Families lists the families method supports.
	Families(method string) []string
	// CheckOptions checks a method's options against its declarations: an
	// unknown key is an error listing the valid ones, a bad value one
	// naming the range.
	CheckOptions(method string, opts map[string]string) error
}

// UnderlayCatalog is implemented by catalogs that know which underlay
// family a method needs to carry a measured family (srv6: IPv6 whatever
// it carries); without it, the measured family is the underlay's.
type UnderlayCatalog interface {
	Underlay(method, family string) string
}

// TestbedCatalog is implemented by catalogs that know which testbeds a
// method is confined to (method.Confined): nil names means every one.
type TestbedCatalog interface {
	Testbeds(method string) (names []string, why string)
}

// ScaleCatalog is implemented by catalogs that know how many tunnels a
// method sets up between two endpoints (method.Scaler): max for family
// with opts, what one tunnel is (unit) and what bounds max (why).
type ScaleCatalog interface {
	Tunnels(method, family string, opts map[string]string) (max int, unit, why string)
}

// SpreadCatalog is implemented by catalogs that know whether every one
// of a method's tunnels carries load as the measured one does
// (method.Scale's Carries), what spread needs: false where the others
// are fillers. unit is what one tunnel is.
type SpreadCatalog interface {
	Carries(method, family string, opts map[string]string) (carries bool, unit string)
}

// GrowCatalog is implemented by catalogs that know which methods can
// add one more tunnel to a running set-up (method.Grower), what the
// reconf test does.
type GrowCatalog interface {
	Grows(method string) bool
}

// TunnelCostCatalog is implemented by catalogs that estimate how long one
// of a method's tunnels takes to set up and tear down (method.Scale's
// Cost), in seconds, for the plan's estimate of a sweep.
type TunnelCostCatalog interface {
	TunnelCost(method, family string, opts map[string]string) float64
}

// MaxTunnels is the most tunnels the scenario may ask of any method.
const MaxTunnels = 100000

// TunnelCounts are the scenario's tunnel counts: [1] when it gives none.
func (s Scenario) TunnelCounts() []int {
	if len(s.Tunnels) == 0 {
		return []int{1}
	}
	return s.Tunnels
}

// TestsCatalog is implemented by catalogs that know which tests a
// method cannot carry with its options (method.TestChecker): CheckTests
// says why and what to do instead, nil when it can carry them all.
type TestsCatalog interface {
	CheckTests(method string, opts map[string]string, tests, families []string, latencyTool string, mss []int, congestion []string) error
}

// UnderlayFamilies returns, for every underlay family the scenario's
// methods need (in ipv4, ipv6 order), the methods that need it: the
// addresses each host must have on its underlay device.
func (s Scenario) UnderlayFamilies(c Catalog) (families []string, methods map[string][]string) {
	methods = map[string][]string{}
	uc, _ := c.(UnderlayCatalog)
	for _, m := range s.Methods {
		if !slices.Contains(c.Names(), m) {
			continue
		}
		for _, f := range s.Families {
			if !slices.Contains(c.Families(m), f) {
				continue
			}
			u := f
			if uc != nil {
				u = uc.Underlay(m, f)
			}
			if !slices.Contains(methods[u], m) {
				methods[u] = append(methods[u], m)
			}
		}
	}
	for _, f := range []string{"ipv4", "ipv6"} {
		if len(methods[f]) > 0 {
			families = append(families, f)
		}
	}
	return families, methods
}

// Default returns the default scenario: the methods this host
// kernel runs, IPv4, MTU 1500, offloads on, one stream, 3 repetitions.
func Default() Scenario {
	return Scenario{
		Name:        "default",
		Testbed:     "local",
		Methods:     []string{"native", "vxlan", "srv6"},
		Families:    []string{"ipv4"},
		MTUs:        []int{1500},
		Offloads:    []string{"on"},
		Streams:     []int{1},
		Duration:    "10s",
		Omit:        "1s",
		Latency:     "3s",
		LatencyTool: "rr",
		Repetitions: 3,
		Order:       "interleave",

		Tests:             []string{TestTCPStream, TestTCPRR},
		Directions:        []string{DirForward},
		StreamsPerProcess: MaxStreamsPerProcess,
		UDP: UDP{
			Sizes:       slices.Clone(SeedUDPFrames),
			Rate:        UDPUnlimited,
			Trial:       "1s",
			SearchSteps: 6,
		},
		Recover: Recover{Down: "2s"},
	}
}

// Parse decodes YAML over the defaults: fields the document leaves out
// keep their default value. Unknown fields are errors with line numbers.
func Parse(data []byte) (s Scenario, err error) {
	// goccy/go-yaml v1.19.2 panics on some malformed documents (a tag on a
	// list field, such as "methods: !00"; found by FuzzParse): that is a
	// bad document, reported as an error, not a crash.
	defer func() {
		if r := recover(); r != nil {
			s, err = Scenario{}, fmt.Errorf("scenario: cannot decode the document (the YAML decoder failed: %v): check its tags (!...) and indentation", r)
		}
	}()
	s = Default()
	if len(bytes.TrimSpace(data)) == 0 {
		return s, nil
	}
	// Lists in the document replace the default lists.
	var probe map[string]any
	if err := yaml.Unmarshal(data, &probe); err == nil {
		for k := range probe {
			switch k {
			case "methods":
				s.Methods = nil
			case "families":
				s.Families = nil
			case "mtus":
				s.MTUs = nil
			case "offloads":
				s.Offloads = nil
			case "streams":
				s.Streams = nil
			case "tunnels":
				s.Tunnels = nil
			case "tests":
				s.Tests = nil
			case "direction":
				s.Directions = nil
			case "congestion_control":
				s.CongestionControl = nil
			case "wan":
				s.WAN = nil
			case "udp":
				if m, ok := probe[k].(map[string]any); ok {
					if _, ok := m["sizes"]; ok {
						s.UDP.Sizes = nil
					}
				}
			}
		}
	}
	// Top-level mappings that are no field of the scenario are the
	// testbeds' sections, decoded by their testbeds (Section).
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: %s", yaml.FormatError(err, false, true))
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return s, nil
	}
	sections := splitSections(f.Docs[0].Body)
	if err := yaml.NodeToValue(f.Docs[0].Body, &s, yaml.DisallowUnknownField(), yaml.Strict()); err != nil {
		return Scenario{}, fmt.Errorf("scenario: %s", yaml.FormatError(err, false, true))
	}
	s.Sections = sections
	return s, nil
}

// YAML renders the scenario, so a run stores exactly what it ran.
func (s Scenario) YAML() string {
	out, err := yaml.Marshal(s)
	if err != nil {
		return fmt.Sprintf("# cannot render scenario: %v\n", err)
	}
	sections, err := s.sectionsYAML()
	if err != nil {
		return fmt.Sprintf("# cannot render scenario: %v\n", err)
	}
	return string(out) + sections
}

// Durations are the parsed time fields.
type Durations struct {
	Duration, Omit, Latency time.Duration
}

// Times parses the duration fields; Validate has checked them.
func (s Scenario) Times() Durations {
	d, _ := parseDuration(s.Duration)
	o, _ := parseDuration(s.Omit)
	l, _ := parseDuration(s.Latency)
	return Durations{Duration: d, Omit: o, Latency: l}
}

func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, err
	}
	return d, nil
}

// Validate checks the scenario against the catalog and returns every
// problem at once, each naming its field and its fix: its testbed's
// (asked through the catalog), then field by field in the order the
// document reads.
func (s Scenario) Validate(c Catalog) error {
	p := &problems{}
	p.errs = append(p.errs, s.validateBed(c)...)
	s.validateMethods(c, p.bad)
	s.validateDimensions(p.bad)
	s.validateTests(p.bad)
	s.validateTimes(p.bad)
	s.validateOptions(c, p.bad)
	if s.HasTest(TestUDPSizes) {
		s.validateUDP(c, p.bad)
	}
	if s.HasTest(TestRecover) {
		s.validateRecover(c, p)
	}
	s.validateReference(c.Names(), p.bad)
	s.validateSkipped(c.Names(), p.bad)
	for i, w := range s.WAN {
		if _, err := w.Parse(); err != nil {
			p.bad(fmt.Sprintf("wan[%d]", i), "%v", err)
		}
	}
	s.validateOverhead(c, p.bad)
	s.validateTunnels(c, p.bad)
	if s.Spread {
		s.validateSpread(c, p.bad)
	}
	if s.HasTest(TestReconf) {
		s.validateReconf(c, p.bad)
	}
	return errors.Join(p.errs...)
}

// problems collects validation errors, each naming its field.
type problems struct{ errs []error }

// bad adds the problem of field, its fix said by format.
func (p *problems) bad(field, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

// validateMethods checks the methods: known, listed once, and each on a
// testbed it runs on.
func (s Scenario) validateMethods(c Catalog, bad func(field, format string, args ...any)) {
	if tc, ok := c.(TestbedCatalog); ok {
		for _, m := range s.Methods {
			if beds, why := tc.Testbeds(m); beds != nil && !slices.Contains(beds, s.Testbed) {
				bad("methods", "%s %s, on testbed %s only: set testbed: %s or drop it", m, why, strings.Join(beds, " or "), beds[0])
			}
		}
	}
	if len(s.Methods) == 0 {
		bad("methods", "empty: list at least one of %s", strings.Join(c.Names(), ", "))
	}
	for _, m := range s.Methods {
		if !slices.Contains(c.Names(), m) {
			bad("methods", "unknown method %q: valid methods are %s", m, strings.Join(c.Names(), ", "))
		}
	}
	if dup := duplicate(s.Methods); dup != "" {
		bad("methods", "%q is listed twice: list each method once", dup)
	}
}

// validateDimensions checks the matrix's dimensions of the underlay:
// families, MTUs, offloads and their named sets, stream counts.
func (s Scenario) validateDimensions(bad func(field, format string, args ...any)) {
	if len(s.Families) == 0 {
		bad("families", "empty: use ipv4, ipv6 or both")
	}
	for _, f := range s.Families {
		if f != "ipv4" && f != "ipv6" {
			bad("families", "unknown family %q: use ipv4 or ipv6", f)
		}
	}
	if len(s.MTUs) == 0 {
		bad("mtus", "empty: give at least one underlay MTU, e.g. 1500 or 9000")
	}
	for _, mtu := range s.MTUs {
		if mtu < 576 || mtu > 65535 {
			bad("mtus", "underlay MTU %d out of range: use 576 to 65535 (1500 default, 9000 jumbo)", mtu)
		}
	}
	if len(s.Offloads) == 0 {
		bad("offloads", "empty: use on, off or both")
	}
	for _, o := range s.Offloads {
		if _, ok := s.OffloadSet(o); !ok && o != "on" && o != "off" {
			bad("offloads", "unknown value %q: use on, off (TSO/GSO/GRO on the path) or a feature set: %s", o, strings.Join(s.offloadSetNames(), ", "))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.OffloadSets)) {
		if name == "on" || name == "off" {
			bad("offload_sets", "%q is reserved: name the set otherwise", name)
		}
		if len(s.OffloadSets[name]) == 0 {
			bad("offload_sets."+name, "empty: give features, e.g. {tx-udp_tnl-segmentation: off}")
		}
		for f, v := range s.OffloadSets[name] {
			if v != "on" && v != "off" {
				bad("offload_sets."+name, "%s: %q: use on or off", f, v)
			}
		}
	}
	if len(s.Streams) == 0 {
		bad("streams", "empty: give at least one stream count, e.g. 1")
	}
	for _, n := range s.Streams {
		switch {
		case n < 1 || n > MaxStreams:
			bad("streams", "%d parallel streams: use 1 to %d", n, MaxStreams)
		case n > MaxStreamsPerProcess && s.HasTest(TestTCPStream):
			bad("streams", "%d streams: tcp_stream runs one iperf3 process, which takes at most %d; measure more with tests: [parallel]", n, MaxStreamsPerProcess)
		}
	}
}

// validateTests checks the tests and the TCP dimensions they take:
// directions, MSS and congestion control.
func (s Scenario) validateTests(bad func(field, format string, args ...any)) {
	if len(s.Tests) == 0 {
		bad("tests", "empty: list at least one of %s", strings.Join(Tests, ", "))
	}
	for _, t := range s.Tests {
		if !slices.Contains(Tests, t) {
			bad("tests", "unknown test %q: valid tests are %s", t, strings.Join(Tests, ", "))
		}
	}
	if dup := duplicate(s.Tests); dup != "" {
		bad("tests", "%q is listed twice: list each test once", dup)
	}
	if len(s.Directions) == 0 {
		bad("direction", "empty: use forward, reverse, bidir or several")
	}
	for _, d := range s.Directions {
		if d != DirForward && d != DirReverse && d != DirBidir {
			bad("direction", "unknown direction %q: use forward (a sends), reverse (b sends) or bidir (both)", d)
		}
	}
	if dup := duplicate(s.Directions); dup != "" {
		bad("direction", "%q is listed twice: list each direction once", dup)
	}
	for _, m := range s.MSS {
		if m < MinMSS || m > 65495 {
			bad("mss", "MSS %d out of range: use %d (Linux's smallest) to 65495", m, MinMSS)
		}
	}
	for _, cc := range s.CongestionControl {
		if !congestionName.MatchString(cc) {
			bad("congestion_control", "%q is not an algorithm name: use one of the kernel's, e.g. cubic, bbr or reno (net.ipv4.tcp_available_congestion_control)", cc)
		}
	}
	if dup := duplicate(s.CongestionControl); dup != "" {
		bad("congestion_control", "%q is listed twice: list each algorithm once", dup)
	}
}

// validateTimes checks how the load runs: streams per process, line
// rate, the durations, the latency tool, repetitions and order.
func (s Scenario) validateTimes(bad func(field, format string, args ...any)) {
	if s.StreamsPerProcess < 1 || s.StreamsPerProcess > MaxStreamsPerProcess {
		bad("streams_per_process", "%d: use 1 (one iperf3 process per stream) to %d (iperf3's limit)", s.StreamsPerProcess, MaxStreamsPerProcess)
	}
	if s.LineRate != "" {
		if _, err := ParseRate(s.LineRate); err != nil {
			bad("line_rate", "%v", err)
		}
	}
	if (s.HasTest(TestTCPRR) || s.HasTest(TestLatencyUnderLoad)) && s.Latency != "" {
		if d, err := parseDuration(s.Latency); err == nil && d == 0 && s.HasTest(TestLatencyUnderLoad) {
			bad("latency", "latency_under_load measures request/response for the latency duration, which is 0s: give latency: 3s or more")
		}
	}
	times := map[string]string{"duration": s.Duration, "omit": s.Omit, "latency": s.Latency}
	for _, field := range []string{"duration", "omit", "latency"} {
		d, err := parseDuration(times[field])
		switch {
		case err != nil:
			bad(field, "malformed duration %q: write a Go duration such as 10s, 500ms or 1m30s", times[field])
		case d < 0:
			bad(field, "negative duration %s: use 0 or more", times[field])
		case field == "duration" && d < time.Second:
			bad(field, "%s is too short: iperf3 measures whole seconds, use 1s or more", times[field])
		case d%time.Second != 0 && field != "latency":
			bad(field, "%s is not whole seconds: iperf3 takes whole seconds, e.g. 10s", times[field])
		case field == "latency" && d > 0 && d < time.Second:
			bad(field, "%s is too short: use 0s to skip the latency test, or 1s or more", times[field])
		}
	}
	switch s.LatencyTool {
	case "rr":
	case "sockperf":
		if slices.Contains(s.Families, "ipv6") {
			bad("latency_tool", "sockperf 3.7 measures IPv4 only and families lists ipv6: use latency_tool: rr")
		}
	default:
		bad("latency_tool", "unknown tool %q: use rr or sockperf", s.LatencyTool)
	}
	if s.Repetitions < 1 || s.Repetitions > 1000 {
		bad("repetitions", "%d: use 1 to 1000 (3 or more give a confidence interval)", s.Repetitions)
	}
	switch s.Order {
	case "interleave", "grouped":
	default:
		bad("order", "unknown order %q: use interleave or grouped", s.Order)
	}
}

// validateOptions checks each method's options against its declarations,
// and the tests each method can carry with them.
func (s Scenario) validateOptions(c Catalog, bad func(field, format string, args ...any)) {
	for _, m := range slices.Sorted(maps.Keys(s.Options)) {
		switch {
		case !slices.Contains(s.Methods, m):
			bad("options", "options for %q, which is not in methods: add it to methods or remove its options", m)
		case slices.Contains(c.Names(), m):
			if err := c.CheckOptions(m, s.Options[m]); err != nil {
				bad("options."+m, "%v (tunbench methods --options %s lists them)", err, m)
			}
		}
	}
	if tc, ok := c.(TestsCatalog); ok {
		for _, m := range s.Methods {
			if !slices.Contains(c.Names(), m) {
				continue
			}
			if err := tc.CheckTests(m, s.Options[m], s.Tests, s.Families, s.LatencyTool, s.MSS, s.CongestionControl); err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					bad("tests", "%s", line)
				}
			}
		}
	}
}

// validateTunnels checks the tunnel counts: each 1 to MaxTunnels, listed
// once, and within what each method sets up in each family it runs
// (ScaleCatalog), before anything is created.
func (s Scenario) validateTunnels(c Catalog, bad func(field, format string, args ...any)) {
	for _, n := range s.Tunnels {
		if n < 1 || n > MaxTunnels {
			bad("tunnels", "%d tunnels: use 1 to %d", n, MaxTunnels)
		}
	}
	if dup := duplicateInt(s.Tunnels); dup != 0 {
		bad("tunnels", "%d is listed twice: list each count once", dup)
	}
	sc, ok := c.(ScaleCatalog)
	if !ok {
		return
	}
	most := slices.Max(append([]int{1}, s.Tunnels...))
	if most <= 1 {
		return
	}
	s.eachMethodFamily(c, func(m, f string) {
		max, unit, why := sc.Tunnels(m, f, s.Options[m])
		switch {
		case max == 1 && slices.Contains(s.TunnelCounts(), 1):
			// A one-tunnel method in a sweep that has 1 (native as
			// the baseline) runs at one tunnel only (OneTunnelOnly).
		case max == 1:
			bad("tunnels", "%v: %s over %s sets up one tunnel only (%s): add 1 to tunnels (it then runs at 1 only) or drop %s",
				s.Tunnels, m, f, why, m)
		case most > max:
			bad("tunnels", "%d: %s over %s sets up at most %d (one tunnel is one %s; %s): lower tunnels to %d or drop %s",
				most, m, f, max, unit, why, max, m)
		}
	})
}

// eachMethodFamily calls fn for every method of s the catalog knows with
// valid options, over every family of s the method carries: the pairs
// whose own checks mean anything (the others are refused elsewhere).
func (s Scenario) eachMethodFamily(c Catalog, fn func(m, f string)) {
	for _, m := range s.Methods {
		if !slices.Contains(c.Names(), m) || c.CheckOptions(m, s.Options[m]) != nil {
			continue
		}
		for _, f := range s.Families {
			if slices.Contains(c.Families(m), f) {
				fn(m, f)
			}
		}
	}
}

// Processes is how many iperf3 processes the parallel test runs for
// streams streams at streams_per_process perProcess (load.SplitStreams):
// streams over perProcess, rounded up.
func Processes(streams, perProcess int) int {
	perProcess = min(max(perProcess, 1), MaxStreamsPerProcess)
	return (max(streams, 0) + perProcess - 1) / perProcess
}

// validateSpread checks spread: it spreads the parallel test's processes
// over the tunnels, one tunnel each, so it needs the parallel test, at
// least as many tunnels as processes at every count, and methods whose
// every tunnel carries load (SpreadCatalog).
func (s Scenario) validateSpread(c Catalog, bad func(field, format string, args ...any)) {
	if !s.HasTest(TestParallel) {
		bad("spread", "spread spreads the parallel test's iperf3 processes over the tunnels, and tests has no parallel: add parallel to tests or drop spread")
		return
	}
	if s.StreamsPerProcess >= 1 && s.StreamsPerProcess <= MaxStreamsPerProcess && len(s.Streams) > 0 {
		k := Processes(slices.Max(s.Streams), s.StreamsPerProcess)
		n := slices.Min(s.TunnelCounts())
		if k > n {
			bad("spread", "%d streams at streams_per_process %d are %d iperf3 processes, each over a tunnel of its own, and tunnels %v has %d: give every tunnel count at least %d (tunnels), fewer streams, more streams_per_process, or drop spread",
				slices.Max(s.Streams), s.StreamsPerProcess, k, s.TunnelCounts(), n, k)
		}
	}
	sc, _ := c.(ScaleCatalog)
	spc, _ := c.(SpreadCatalog)
	if sc == nil || spc == nil {
		return
	}
	s.eachMethodFamily(c, func(m, f string) {
		max, _, why := sc.Tunnels(m, f, s.Options[m])
		carries, unit := spc.Carries(m, f, s.Options[m])
		switch {
		case max == 1:
			bad("spread", "%s over %s sets up one tunnel only (%s), with nothing to spread streams over: drop spread or drop %s", m, f, why, m)
		case !carries:
			bad("spread", "%s over %s cannot spread streams over its tunnels: one tunnel is one %s, and every %s but the measured one is a filler that carries no traffic: drop spread or drop %s",
				m, f, unit, unit, m)
		}
	})
}

// OneTunnelOnly reports whether method m, in family f, runs at one tunnel
// only in a sweep of tunnel counts: it sets up one (its Scale's Max is
// 1), like native, the baseline, and is measured at the sweep's count 1.
// Validation refuses a sweep without 1 for such a method.
func OneTunnelOnly(c Catalog, m, f string, opts map[string]string) bool {
	sc, ok := c.(ScaleCatalog)
	if !ok {
		return false
	}
	max, _, _ := sc.Tunnels(m, f, opts)
	return max == 1
}

// validateReconf checks that every method of a scenario with the reconf
// test can add one more tunnel to a running set-up (GrowCatalog), and
// that the largest tunnel count plus that one is within what it sets up
// (ScaleCatalog; validateTunnels refuses a count already above it).
func (s Scenario) validateReconf(c Catalog, bad func(field, format string, args ...any)) {
	gc, ok := c.(GrowCatalog)
	if !ok {
		return
	}
	var growers []string
	for _, m := range c.Names() {
		if gc.Grows(m) {
			growers = append(growers, m)
		}
	}
	can := "none does yet"
	if len(growers) > 0 {
		can = "those that can: " + strings.Join(growers, ", ")
	}
	most := slices.Max(s.TunnelCounts())
	sc, _ := c.(ScaleCatalog)
	for _, m := range s.Methods {
		if !slices.Contains(c.Names(), m) || c.CheckOptions(m, s.Options[m]) != nil {
			continue
		}
		if !gc.Grows(m) {
			bad("tests", "reconf adds one tunnel to a running set-up and %s cannot (it is no method.Grower): drop reconf or drop %s (%s)", m, m, can)
			continue
		}
		if sc == nil {
			continue
		}
		for _, f := range s.Families {
			if !slices.Contains(c.Families(m), f) {
				continue
			}
			max, unit, why := sc.Tunnels(m, f, s.Options[m])
			switch {
			case max == 1:
				// It runs at one tunnel only (OneTunnelOnly).
				bad("tests", "reconf adds a second tunnel, and %s over %s sets up one only (%s): drop reconf or drop %s", m, f, why, m)
			case most == max:
				bad("tunnels", "%d: reconf adds one more, and %s over %s sets up at most %d (one tunnel is one %s; %s): lower tunnels to %d or drop reconf",
					most, m, f, max, unit, why, max-1)
			}
		}
	}
}

// duplicateInt returns a value listed twice in xs, 0 when none is.
func duplicateInt(xs []int) int {
	seen := map[int]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return 0
}

// validateOverhead checks, per method, that families lists one it
// carries and that every MTU leaves room for its overhead.
func (s Scenario) validateOverhead(c Catalog, bad func(field, format string, args ...any)) {
	for _, m := range s.Methods {
		if !slices.Contains(c.Names(), m) {
			continue
		}
		supported := c.Families(m)
		any := false
		for _, f := range s.Families {
			if slices.Contains(supported, f) {
				any = true
			}
		}
		if !any {
			bad("methods", "%s supports only %s, and families lists %s: add %s to families or drop %s",
				m, strings.Join(supported, ", "), strings.Join(s.Families, ", "), supported[0], m)
		}
		for _, f := range s.Families {
			if !slices.Contains(supported, f) {
				continue
			}
			for _, mtu := range s.MTUs {
				over := c.Overhead(m, f)
				if mtu-over < MinOverlayMTU(f) {
					bad("mtus", "underlay MTU %d is too small for %s over %s: it adds %d bytes per packet, leaving %d, below the %s minimum %d; use an MTU of at least %d",
						mtu, m, f, over, mtu-over, f, MinOverlayMTU(f), MinOverlayMTU(f)+over)
				}
			}
		}
	}
}

// validateUDP checks the udp_sizes test's settings and each frame size
// against every method's overlay MTU.
func (s Scenario) validateUDP(c Catalog, bad func(field, format string, args ...any)) {
	u := s.UDP
	if len(u.Sizes) == 0 {
		bad("udp.sizes", "empty: give frame sizes, e.g. seed 002's %v", SeedUDPFrames)
	}
	switch u.Rate {
	case UDPUnlimited, UDPSearch:
	default:
		if _, err := ParseRate(u.Rate); err != nil {
			bad("udp.rate", "%q: use unlimited, search, or an offered rate such as 1G", u.Rate)
		}
	}
	if d, err := parseDuration(u.Trial); err != nil || d < 100*time.Millisecond {
		bad("udp.trial", "%q: a search trial of 100ms or more, e.g. 1s", u.Trial)
	}
	if u.SearchSteps < 1 || u.SearchSteps > 20 {
		bad("udp.search_steps", "%d: use 1 to 20 halvings", u.SearchSteps)
	}
	for _, f := range s.Families {
		for _, size := range u.Sizes {
			if p := UDPPayload(size, f); p < UDPHeaderBytes {
				bad("udp.sizes", "frame %d over %s leaves a %d-byte UDP payload, below the generator's %d-byte header: use frames of %d bytes or more",
					size, f, p, UDPHeaderBytes, size-p+UDPHeaderBytes)
			}
			if size > 65535 {
				bad("udp.sizes", "frame %d: at most 65535", size)
			}
		}
	}
	if u.Fragment {
		return
	}
	for _, m := range s.Methods {
		if !slices.Contains(c.Names(), m) {
			continue
		}
		for _, f := range s.Families {
			if !slices.Contains(c.Families(m), f) {
				continue
			}
			for _, mtu := range s.MTUs {
				overlay := mtu - c.Overhead(m, f)
				for _, size := range u.Sizes {
					if size-14 > overlay {
						bad("udp.sizes", "frame %d carries a %d-byte IP packet, above %s's overlay MTU %d at underlay MTU %d over %s: drop the size, or set udp.fragment: true to measure it fragmented",
							size, size-14, m, overlay, mtu, f)
					}
				}
			}
		}
	}
}

// validateRecover checks the recover test's down time, and asks the
// testbed whether a run may take the underlay device down there.
func (s Scenario) validateRecover(c Catalog, p *problems) {
	bad := p.bad
	d, err := parseDuration(s.Recover.Down)
	switch {
	case err != nil:
		bad("recover.down", "malformed duration %q: write a Go duration such as 2s or 500ms", s.Recover.Down)
	case d <= 0:
		bad("recover.down", "%s: the underlay must go down for some time: use a positive duration such as 2s (the default)", s.Recover.Down)
	case d < 10*time.Millisecond:
		bad("recover.down", "%s is shorter than the probe interval (10ms): use 10ms or more, e.g. 2s", s.Recover.Down)
	case d > MaxRecoverDown:
		bad("recover.down", "%s is longer than %s: use a shorter down time, e.g. 2s", s.Recover.Down, MaxRecoverDown)
	}
	if b, ok := s.bed(c); ok && b.CheckRecover != nil {
		p.errs = append(p.errs, b.CheckRecover(s)...)
	}
}

// BuiltinOffloadSets are the named feature sets every scenario may list
// in offloads. Each starts from the devices' defaults (offloads on) and
// sets only the features it names.
var BuiltinOffloadSets = map[string]map[string]bool{
	// The UDP-tunnel segmentation offloads (GSO of VXLAN/Geneve packets).
	"udp-tnl-seg-off": {"tx-udp_tnl-segmentation": false, "tx-udp_tnl-csum-segmentation": false},
	"udp-tnl-seg-on":  {"tx-udp_tnl-segmentation": true, "tx-udp_tnl-csum-segmentation": true},
	"gro-off":         {"generic-receive-offload": false},
	"tso-off":         {"tcp-segmentation-offload": false},
	"gso-off":         {"generic-segmentation-offload": false},
}

// OffloadSet returns the features of a named set (the scenario's own
// first, then the built-in ones).
func (s Scenario) OffloadSet(name string) (map[string]bool, bool) {
	if set, ok := s.OffloadSets[name]; ok {
		out := make(map[string]bool, len(set))
		for f, v := range set {
			out[f] = v == "on"
		}
		return out, true
	}
	set, ok := BuiltinOffloadSets[name]
	return set, ok
}

func (s Scenario) offloadSetNames() []string {
	names := slices.Collect(maps.Keys(BuiltinOffloadSets))
	for n := range s.OffloadSets {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// DefaultCongestionControl is the algorithm the local and vm testbeds
// measure with unless the scenario says otherwise: what the seeds' hosts
// ran, and an algorithm that does not pace itself on veth (BBR does,
// without an fq qdisc, and then measures its pacing, not the data path).
const DefaultCongestionControl = "cubic"

// CongestionControls are the algorithms of the congestion_control
// dimension: the scenario's, else DefaultCongestionControl on the local
// and vm testbeds, else one "" (each host's own default, recorded as the
// connections used it).
func (s Scenario) CongestionControls() []string {
	switch {
	case len(s.CongestionControl) > 0:
		return slices.Clone(s.CongestionControl)
	case s.Remote():
		return []string{""}
	}
	return []string{DefaultCongestionControl}
}

// congestionName is a TCP congestion control algorithm's name as the
// kernel knows it (TCP_CA_NAME_MAX is 16 bytes with the NUL).
var congestionName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,14}$`)

// MinMSS is the smallest TCP MSS Linux accepts (TCP_MIN_MSS).
const MinMSS = 88

// ParseRate reads a rate such as "25G", "10G", "100M", "1.5G" or
// "1000000000" (bits per second, decimal prefixes) and returns bits per
// second.
func ParseRate(v string) (float64, error) {
	t := strings.TrimSpace(v)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bps"), "bit")
	mult := 1.0
	if t != "" {
		switch t[len(t)-1] {
		case 'k', 'K':
			mult = 1e3
		case 'm', 'M':
			mult = 1e6
		case 'g', 'G':
			mult = 1e9
		case 't', 'T':
			mult = 1e12
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("rate %q: write a positive number of bits per second with an optional K, M, G or T, e.g. 25G", v)
	}
	return f * mult, nil
}

// Scale multiplies every duration of the scenario by f (0 < f), so a
// long paper scenario can be tried quickly: --scale 0.1 turns 100 s runs
// into 10 s. Whole-second fields stay whole seconds: the throughput
// duration is rounded and kept at 1 s or more, the warm-up rounded (it may
// become 0), the latency test kept at 1 s or more unless it was 0.
func (s Scenario) Scale(f float64) Scenario {
	scale := func(v string, min time.Duration, whole bool) string {
		d, err := parseDuration(v)
		if err != nil || d == 0 {
			return v
		}
		n := time.Duration(float64(d) * f)
		if whole {
			n = n.Round(time.Second)
		} else {
			n = n.Round(time.Millisecond)
		}
		return max(n, min).String()
	}
	s.Duration = scale(s.Duration, time.Second, true)
	s.Omit = scale(s.Omit, 0, true)
	s.Latency = scale(s.Latency, time.Second, false)
	s.Recover.Down = scale(s.Recover.Down, 10*time.Millisecond, false)
	return s
}

// MinOverlayMTU is the smallest MTU a family allows on the overlay: IPv6
// requires 1280 (RFC 8200); for IPv4, 576 is the size every host must
// accept (RFC 791).
func MinOverlayMTU(family string) int {
	if family == "ipv6" {
		return 1280
	}
	return 576
}

func duplicate(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}
