package scenario_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/scenario"
)

func TestTestsDefaultAndOverride(t *testing.T) {
	s, err := scenario.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"tcp_stream", "tcp_rr"}, s.Tests); diff != "" {
		t.Errorf("default tests (-want +got):\n%s", diff)
	}
	s, err = scenario.Parse([]byte("tests: [parallel]\nstreams: [1, 4, 130, 256, 512]\nstreams_per_process: 1\ndirection: [forward, reverse, bidir]\nmss: [1220, 472, 216]\nline_rate: 25G\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err != nil {
		t.Fatalf("valid parallel scenario refused: %v", err)
	}
	if diff := cmp.Diff([]string{"forward", "reverse", "bidir"}, s.Directions); diff != "" {
		t.Errorf("directions (-want +got):\n%s", diff)
	}
}

func TestTestsValidation(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"tests: [udp_flood]", `tests: unknown test "udp_flood": valid tests are tcp_stream, tcp_rr, parallel, latency_under_load`},
		{"tests: []", "tests: empty"},
		{"tests: [tcp_rr, tcp_rr]", `tests: "tcp_rr" is listed twice`},
		{"streams: [256]", "streams: 256 streams: tcp_stream runs one iperf3 process, which takes at most 128; measure more with tests: [parallel]"},
		{"tests: [parallel]\nstreams: [5000]", "streams: 5000 parallel streams: use 1 to 4096"},
		{"direction: [sideways]", `direction: unknown direction "sideways"`},
		{"mss: [40]", "mss: MSS 40 out of range: use 88"},
		{"streams_per_process: 129", "streams_per_process: 129: use 1"},
		{"line_rate: fast", `line_rate: rate "fast"`},
		{"tests: [latency_under_load]\nlatency: 0s", "latency: latency_under_load measures request/response for the latency duration, which is 0s"},
	} {
		s, err := scenario.Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		err = s.Validate(catalog{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.doc, err, tc.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"25G": 25e9, "10g": 10e9, "100M": 100e6, "1.5G": 1.5e9, "1000": 1000, "40Gbit": 40e9} {
		got, err := scenario.ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1G", "fast"} {
		if _, err := scenario.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
}

// --scale 0.1 turns the paper's 100 s runs into 10 s; whole seconds stay whole.
func TestScale(t *testing.T) {
	s := scenario.Default()
	s.Duration, s.Omit, s.Latency = "100s", "5s", "10s"
	got := s.Scale(0.1)
	if got.Duration != "10s" || got.Omit != "1s" || got.Latency != "1s" {
		t.Errorf("Scale(0.1) = %s/%s/%s, want 10s/1s/1s", got.Duration, got.Omit, got.Latency)
	}
	got = s.Scale(0.001)
	if got.Duration != "1s" || got.Omit != "0s" || got.Latency != "1s" {
		t.Errorf("Scale(0.001) = %s/%s/%s, want 1s/0s/1s (never below 1 s)", got.Duration, got.Omit, got.Latency)
	}
	if err := got.Validate(catalog{}); err != nil {
		t.Errorf("scaled scenario invalid: %v", err)
	}
	s.Latency = "0s"
	if got := s.Scale(0.5); got.Latency != "0s" {
		t.Errorf("a skipped latency test stays skipped, got %s", got.Latency)
	}
}

func TestWANValidation(t *testing.T) {
	s, err := scenario.Parse([]byte("wan: [{delay: 40ms, jitter: 2ms, loss: 0.1%, rate: 1G}, {rate: 200M}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err != nil {
		t.Fatalf("valid wan refused: %v", err)
	}
	v, _ := s.WAN[0].Parse()
	if v != (scenario.WANValues{DelayMs: 40, JitterMs: 2, LossPercent: 0.1, RateBps: 1e9}) || !v.NeedsNetem() {
		t.Errorf("parsed %+v", v)
	}
	if v, _ := s.WAN[1].Parse(); v.NeedsNetem() {
		t.Errorf("a rate alone needs only tbf: %+v", v)
	}
	for _, tc := range []struct{ doc, want string }{
		{"wan: [{}]", "wan[0]: empty"},
		{"wan: [{jitter: 2ms}]", "wan[0]: jitter 2ms without delay"},
		{"wan: [{loss: 101%}]", `wan[0]: loss "101%"`},
		{"wan: [{delay: soon}]", `wan[0]: delay "soon"`},
		{"wan: [{rate: fast}]", `wan[0]: rate "fast"`},
	} {
		s, err := scenario.Parse([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(catalog{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestConnectRecoverValidation(t *testing.T) {
	s, err := scenario.Parse([]byte("tests: [connect, recover]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err != nil {
		t.Fatalf("connect and recover refused: %v", err)
	}
	if d := s.Recover.DownTime(); d.String() != "2s" {
		t.Errorf("default recover.down %s, want 2s", d)
	}
	for _, tc := range []struct{ doc, want string }{
		{"tests: [recover]\nrecover: {down: 0s}", "recover.down: 0s: the underlay must go down for some time: use a positive duration such as 2s"},
		{"tests: [recover]\nrecover: {down: -1s}", "recover.down: -1s: the underlay must go down for some time"},
		{"tests: [recover]\nrecover: {down: soon}", `recover.down: malformed duration "soon": write a Go duration such as 2s`},
		{"tests: [recover]\nrecover: {down: 1ms}", "recover.down: 1ms is shorter than the probe interval (10ms)"},
		{"tests: [recover]\nrecover: {down: 1h}", "recover.down: 1h is longer than 5m0s"},
		{"tests: [connect, reconnect]", `tests: unknown test "reconnect": valid tests are tcp_stream, tcp_rr, parallel, latency_under_load, udp_sizes, mtu_probe, connect, recover`},
	} {
		s, err := scenario.Parse([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		err = s.Validate(catalog{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to contain %q", tc.doc, err, tc.want)
		}
	}
	// --scale shortens the down time too, to no less than 10ms.
	s, _ = scenario.Parse([]byte("tests: [recover]\nrecover: {down: 2s}"))
	if got := s.Scale(0.1).Recover.Down; got != "200ms" {
		t.Errorf("scaled down time %q, want 200ms", got)
	}
}
