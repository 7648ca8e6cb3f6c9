package scenario_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/scenario"
)

const goodReference = `
reference:
  source: 'seed 000: Kannan et al.'
  figures:
    - {method: native, test: tcp_stream, metric: throughput, value: 88, unit: Mbit/s, streams: 1, setup: inter-DC, cite: "Fig. 2"}
    - {method: ipip, test: parallel, metric: percent_of_line_rate, value: 41, unit: "%", streams: 4, cite: "Fig. 15a"}
    - {method: vxlan, test: udp_sizes, metric: throughput, value: 908.55, unit: Mbit/s, frame: 1514, cite: "Fig. 3"}
`

// A reference block parses, validates (a method the run does not measure
// included: flags may narrow a paper's scenario) and survives the run's
// stored YAML.
func TestReferenceValid(t *testing.T) {
	s, err := scenario.Parse([]byte("methods: [native, vxlan]" + goodReference))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err != nil {
		t.Fatalf("valid reference refused: %v", err)
	}
	back, err := scenario.Parse([]byte(s.YAML()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("stored scenario loses the reference (-want +got):\n%s", diff)
	}
	if v, unit := s.Reference.Figures[0].BaseValue(); v != 0.088 || unit != "Gbit/s" {
		t.Errorf("88 Mbit/s in the base unit: %v %s", v, unit)
	}
}

// An unknown field inside the block is refused with its line, before
// anything else.
func TestReferenceUnknownField(t *testing.T) {
	_, err := scenario.Parse([]byte("reference:\n  source: x\n  figures:\n    - method: native\n      vaule: 3\n"))
	if err == nil {
		t.Fatal("unknown field accepted")
	}
	for _, want := range []string{"[5:7]", "vaule"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestReferenceErrors(t *testing.T) {
	fig := func(s string) string {
		return "reference:\n  source: seed\n  figures:\n    - {" + s + "}\n"
	}
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown method", fig(`method: genev, test: tcp_stream, metric: throughput, value: 1, unit: Gbit/s, cite: x`),
			[]string{`reference.figures[0].method: unknown method "genev"`, "native, srv6, vxlan, ipip"}},
		{"unknown test", fig(`method: native, test: tcp_streams, metric: throughput, value: 1, unit: Gbit/s, cite: x`),
			[]string{`reference.figures[0].test: "tcp_streams"`, "parallel, tcp_rr, tcp_stream, udp_sizes"}},
		{"unknown metric", fig(`method: native, test: tcp_rr, metric: throughput, value: 1, unit: Gbit/s, cite: x`),
			[]string{`reference.figures[0].metric: unknown metric "throughput" for test tcp_rr: use p50_rtt, p99_rtt`}},
		{"unit", fig(`method: native, test: tcp_stream, metric: throughput, value: 1, unit: Gbps, cite: x`),
			[]string{`reference.figures[0].unit: "Gbps": give throughput in Gbit/s or Mbit/s`}},
		{"value", fig(`method: native, test: tcp_stream, metric: throughput, value: 0, unit: Gbit/s, cite: x`),
			[]string{`reference.figures[0].value: 0: give the published number`}},
		{"cite", fig(`method: native, test: tcp_stream, metric: throughput, value: 1, unit: Gbit/s`),
			[]string{`reference.figures[0].cite: empty`, "Fig. 15a"}},
		{"frame without udp", fig(`method: native, test: tcp_stream, metric: throughput, value: 1, unit: Gbit/s, frame: 64, cite: x`),
			[]string{`reference.figures[0].frame: a frame size belongs to test udp_sizes`}},
		{"udp without frame", fig(`method: native, test: udp_sizes, metric: throughput, value: 1, unit: Gbit/s, cite: x`),
			[]string{`reference.figures[0].frame: missing`}},
		{"peak at a count", fig(`method: native, test: parallel, metric: peak_throughput, value: 1, unit: Gbit/s, streams: 4, cite: x`),
			[]string{`reference.figures[0].streams: peak_throughput is the highest over every stream count`}},
		{"condition", fig(`method: native, test: tcp_stream, metric: throughput, value: 1, unit: Gbit/s, family: ip4, offloads: maybe, direction: up, mss: 10, cite: x`),
			[]string{`reference.figures[0].family: unknown family "ip4"`, `reference.figures[0].offloads: unknown value "maybe"`,
				`reference.figures[0].direction: unknown direction "up"`, `reference.figures[0].mss: MSS 10 out of range`}},
		{"no source", "reference:\n  figures:\n    - {method: native, test: tcp_stream, metric: throughput, value: 1, unit: Gbit/s, cite: x}\n",
			[]string{"reference.source: empty: name the publication"}},
		{"skipped and measured", "methods: [native, vxlan]\nskipped: [{method: vxlan, reason: no}]", []string{"skipped[0].method: vxlan is in methods too"}},
		{"skipped without reason", "methods: [native]\nskipped: [{method: vxlan}]", []string{"skipped[0].reason: empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := scenario.Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = s.Validate(catalog{})
			if err == nil {
				t.Fatal("Validate accepted bad input")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// SkipMethods drops the methods and their options and records them.
func TestSkipMethods(t *testing.T) {
	s, err := scenario.Parse([]byte("methods: [native, vxlan, srv6]\noptions: {vxlan: {vni: 7}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := s.SkipMethods([]scenario.SkippedMethod{{Method: "vxlan", Reason: "CONFIG_VXLAN missing"}})
	if diff := cmp.Diff([]string{"native", "srv6"}, got.Methods); diff != "" {
		t.Errorf("methods (-want +got):\n%s", diff)
	}
	if len(got.Options) != 0 || len(got.Skipped) != 1 || got.Skipped[0].Reason != "CONFIG_VXLAN missing" {
		t.Errorf("options %v, skipped %v", got.Options, got.Skipped)
	}
	if err := got.Validate(catalog{}); err != nil {
		t.Errorf("scenario after skipping invalid: %v", err)
	}
	if len(s.Methods) != 3 {
		t.Errorf("SkipMethods changed its receiver: %v", s.Methods)
	}
}
