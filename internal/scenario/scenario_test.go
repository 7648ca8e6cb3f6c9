package scenario_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/scenario"
)

type catalog struct{}

// Beds stand in for the testbed registry's (internal/bed/registry, whose
// folders' tests check their sections): "cluster" has a section of that
// name, refuses the recover test, and is stray on scenarios named
// uses-cluster.
func (catalog) Beds() []scenario.Bed {
	return []scenario.Bed{{Name: "local"}, {Name: "vm"}, {Name: "ssh"}, {Name: "kubernetes"}, {
		Name:    "cluster",
		Section: "cluster",
		Check:   func(s scenario.Scenario, _ scenario.Catalog) []error { return []error{errors.New("cluster: checked")} },
		Stray: func(s scenario.Scenario) error {
			if s.Name != "uses-cluster" {
				return nil
			}
			return errors.New("cluster: stray")
		},
		CheckRecover: func(scenario.Scenario) []error { return []error{errors.New("tests: no recover on a cluster")} },
	}}
}

func (catalog) Names() []string {
	return []string{"native", "srv6", "vxlan", "ipip", "pod-network", "wireguard-go"}
}

// Testbeds stands in for the registry's: pod-network is a cluster's.
func (catalog) Testbeds(m string) ([]string, string) {
	if m == "pod-network" {
		return []string{"kubernetes"}, "measures a Kubernetes cluster's pod network between two nodes"
	}
	return nil, ""
}
func (catalog) Overhead(m, f string) int {
	return map[string]int{"native": 0, "srv6": 64, "vxlan/ipv4": 50, "vxlan/ipv6": 70, "ipip": 20}[pick(m, f)]
}
func (catalog) Families(m string) []string {
	if m == "ipip" {
		return []string{"ipv4"}
	}
	return []string{"ipv4", "ipv6"}
}

// Underlay stands in for the registry's: srv6 runs over IPv6, ipip over
// IPv4, whatever they carry.
func (catalog) Underlay(m, f string) string {
	switch m {
	case "srv6":
		return "ipv6"
	case "ipip":
		return "ipv4"
	}
	return f
}

// CheckOptions stands in for the method registry: vxlan takes vni, an
// integer; the rest take nothing.

func (catalog) CheckOptions(m string, opts map[string]string) error {
	for k, v := range opts {
		if m != "vxlan" || k != "vni" {
			return fmt.Errorf("%s: unknown option %q", m, k)
		}
		if _, err := strconv.Atoi(v); err != nil {
			return fmt.Errorf("%s: option vni=%q: want an integer from 1 to 16777215", m, v)
		}
	}
	return nil
}

// Tunnels stands in for the registry's scale (method.Scaler): vxlan sets
// up 16384 devices over IPv4, the rest one tunnel.
// Grows stands in for the registry's growers (method.Grower): vxlan.
func (catalog) Grows(m string) bool { return m == "vxlan" }

func (catalog) Tunnels(m, f string, _ map[string]string) (int, string, string) {
	if m == "vxlan" && f == "ipv4" {
		return 16384, "VXLAN device", "the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs"
	}
	if m == "wireguard-go" {
		return 16384, "peer", "the address plan"
	}
	return 1, "tunnel", m + " sets up one tunnel between two endpoints"
}

// Carries stands in for the registry's (method.Scale's Carries): every
// VXLAN device carries load; wireguard-go's other peers are fillers.
func (c catalog) Carries(m, f string, opts map[string]string) (bool, string) {
	_, unit, _ := c.Tunnels(m, f, opts)
	return m == "vxlan", unit
}

func pick(m, f string) string {
	if m == "vxlan" {
		return m + "/" + f
	}
	return m
}

func TestDefaultIsValid(t *testing.T) {
	s, err := scenario.Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err != nil {
		t.Fatalf("default scenario invalid: %v", err)
	}
	if diff := cmp.Diff([]string{"native", "vxlan", "srv6"}, s.Methods); diff != "" {
		t.Errorf("default methods (-want +got):\n%s", diff)
	}
}

func TestParseOverridesDefaults(t *testing.T) {
	s, err := scenario.Parse([]byte("methods: [vxlan]\nmtus: [9000]\nrepetitions: 5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"vxlan"}, s.Methods); diff != "" {
		t.Errorf("methods (-want +got):\n%s", diff)
	}
	if s.MTUs[0] != 9000 || len(s.MTUs) != 1 || s.Repetitions != 5 || s.Duration != "10s" {
		t.Errorf("got %+v", s)
	}
}

func TestParseUnknownFieldHasLine(t *testing.T) {
	_, err := scenario.Parse([]byte("methods: [vxlan]\nrepetition: 5\n"))
	if err == nil {
		t.Fatal("unknown field accepted")
	}
	for _, want := range []string{"[2:1]", "repetition"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"unknown method", "methods: [native, vxlna]", []string{`methods: unknown method "vxlna"`, "native, srv6, vxlan, ipip"}},
		{"malformed duration", "duration: 10x", []string{`duration: malformed duration "10x"`, "10s"}},
		{"fraction of second", "duration: 1500ms", []string{"duration: 1500ms is not whole seconds"}},
		{"zero repetitions", "repetitions: 0", []string{"repetitions: 0: use 1 to 1000"}},
		{"negative repetitions", "repetitions: -2", []string{"repetitions: -2: use 1 to 1000"}},
		{"zero mtu", "mtus: [0]", []string{"mtus: underlay MTU 0 out of range: use 576 to 65535"}},
		{"negative stream count", "streams: [-1]", []string{"streams: -1 parallel streams: use 1 to 4096"}},
		{"negative latency", "latency: -1s", []string{"latency: negative duration -1s"}},
		{"zero duration", "duration: 0s", []string{"duration: 0s is too short"}},
		{"unknown option", "methods: [vxlan]\noptions: {vxlan: {vin: 7}}", []string{`options.vxlan: vxlan: unknown option "vin"`, "tunbench methods --options vxlan"}},
		{"bad option value", "methods: [vxlan]\noptions: {vxlan: {vni: abc}}", []string{`options.vxlan: vxlan: option vni="abc": want an integer from 1 to 16777215`}},
		{"mtu too small", "methods: [vxlan]\nfamilies: [ipv6]\nmtus: [1300]", []string{"mtus: underlay MTU 1300 is too small for vxlan over ipv6", "at least 1350"}},
		{"family unsupported", "methods: [ipip]\nfamilies: [ipv6]", []string{"ipip supports only ipv4"}},
		{"offloads", "offloads: [maybe]", []string{`offloads: unknown value "maybe"`}},
		{"streams", "streams: [0]", []string{"streams: 0 parallel streams"}},
		{"options for absent method", "options: {ipip: {x: y}}", []string{`options for "ipip", which is not in methods`}},
		{"congestion control name", "congestion_control: [Cubic]", []string{`congestion_control: "Cubic" is not an algorithm name`, "net.ipv4.tcp_available_congestion_control"}},
		{"tunnels zero", "tunnels: [0]", []string{"tunnels: 0 tunnels: use 1 to 100000"}},
		{"tunnels twice", "tunnels: [10, 10]", []string{"tunnels: 10 is listed twice"}},
		{"tunnels above a method's maximum", "methods: [vxlan, srv6]\ntunnels: [1, 20000]", []string{
			"tunnels: 20000: vxlan over ipv4 sets up at most 16384 (one tunnel is one VXLAN device; the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs): lower tunnels to 16384 or drop vxlan",
		}},
		{"tunnels without 1 for a one-tunnel method", "methods: [vxlan, srv6]\ntunnels: [10, 100]", []string{
			"tunnels: [10 100]: srv6 over ipv4 sets up one tunnel only (srv6 sets up one tunnel between two endpoints): add 1 to tunnels (it then runs at 1 only) or drop srv6"}},
		{"reconf without a grower", "methods: [native, vxlan]\ntests: [reconf]", []string{
			"tests: reconf adds one tunnel to a running set-up and native cannot (it is no method.Grower): drop reconf or drop native (those that can: vxlan)"}},
		{"reconf with a grower of one tunnel", "methods: [vxlan]\nfamilies: [ipv6]\ntests: [reconf]", []string{
			"tests: reconf adds a second tunnel, and vxlan over ipv6 sets up one only (vxlan sets up one tunnel between two endpoints): drop reconf or drop vxlan"}},
		{"reconf at a method's maximum", "methods: [vxlan]\ntests: [tcp_stream, reconf]\ntunnels: [100, 16384]", []string{
			"tunnels: 16384: reconf adds one more, and vxlan over ipv4 sets up at most 16384 (one tunnel is one VXLAN device; the IPv4 address plan 198.19.128.0/17 holds 16384 /31 pairs): lower tunnels to 16383 or drop reconf"}},
		{"congestion control twice", "congestion_control: [bbr, bbr]", []string{`congestion_control: "bbr" is listed twice`}},
		{"spread without the parallel test", "methods: [vxlan]\ntunnels: [4]\nspread: true", []string{
			"spread: spread spreads the parallel test's iperf3 processes over the tunnels, and tests has no parallel: add parallel to tests or drop spread"}},
		{"spread with more processes than tunnels", "methods: [vxlan]\ntests: [parallel]\nstreams: [2, 8]\nstreams_per_process: 2\ntunnels: [3, 100]\nspread: true", []string{
			"spread: 8 streams at streams_per_process 2 are 4 iperf3 processes, each over a tunnel of its own, and tunnels [3 100] has 3: give every tunnel count at least 4 (tunnels), fewer streams, more streams_per_process, or drop spread"}},
		{"spread over one tunnel", "methods: [vxlan]\ntests: [parallel]\nstreams: [2]\nstreams_per_process: 1\nspread: true", []string{
			"spread: 2 streams at streams_per_process 1 are 2 iperf3 processes, each over a tunnel of its own, and tunnels [1] has 1"}},
		{"spread with fillers", "methods: [vxlan, wireguard-go]\ntests: [parallel]\nstreams: [4]\nstreams_per_process: 1\ntunnels: [10]\nspread: true", []string{
			"spread: wireguard-go over ipv4 cannot spread streams over its tunnels: one tunnel is one peer, and every peer but the measured one is a filler that carries no traffic: drop spread or drop wireguard-go"}},
		{"spread with a one-tunnel method", "methods: [native, vxlan]\ntests: [parallel]\nstreams: [4]\nstreams_per_process: 1\ntunnels: [1, 10]\nspread: true", []string{
			"spread: native over ipv4 sets up one tunnel only (native sets up one tunnel between two endpoints), with nothing to spread streams over: drop spread or drop native"}},
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

// TestReconfValid: reconf with a method that grows, below its maximum,
// validates.
func TestReconfValid(t *testing.T) {
	s, err := scenario.Parse([]byte("methods: [vxlan]\ntests: [tcp_stream, reconf]\ntunnels: [1, 100, 16383]"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// TestSpreadValid: spread with the parallel test, as many tunnels as
// processes or more at every count, and methods whose tunnels all carry
// load, validates.
func TestSpreadValid(t *testing.T) {
	s, err := scenario.Parse([]byte("methods: [vxlan]\ntests: [parallel]\nstreams: [1, 4]\nstreams_per_process: 1\ntunnels: [4, 100]\nspread: true"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if !s.Spread {
		t.Error("spread: true parsed as false")
	}
	if got := scenario.Processes(4, 1); got != 4 {
		t.Errorf("Processes(4, 1) = %d, want 4", got)
	}
	if got := scenario.Processes(300, 128); got != 3 {
		t.Errorf("Processes(300, 128) = %d, want 3", got)
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	s := scenario.Default()
	s.Options = map[string]map[string]string{"vxlan": {"vni": "7"}}
	back, err := scenario.Parse([]byte(s.YAML()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestValidateAsksTheTestbed: validation names no testbed; it asks the
// catalog's: the scenario's own for its checks and for the recover test,
// every other one for what only it uses.
func TestValidateAsksTheTestbed(t *testing.T) {
	s := scenario.Default()
	s.Name = "uses-cluster"
	s.Tests = []string{scenario.TestRecover}
	err := s.Validate(catalog{})
	if err == nil || !strings.Contains(err.Error(), "cluster: stray") || strings.Contains(err.Error(), "recover") {
		t.Errorf("on local: %v, want only the other testbed's stray check", err)
	}
	s.Testbed = "cluster"
	err = s.Validate(catalog{})
	if err == nil || !strings.Contains(err.Error(), "cluster: checked") || !strings.Contains(err.Error(), "tests: no recover on a cluster") || strings.Contains(err.Error(), "stray") {
		t.Errorf("on cluster: %v, want its checks and its recover refusal", err)
	}
	s.Testbed = "qemu"
	if err := s.Validate(catalog{}); err == nil || !strings.Contains(err.Error(), `testbed: unknown testbed "qemu": use local, vm, ssh, kubernetes or cluster`) {
		t.Errorf("unknown testbed: %v", err)
	}
}

// A testbed's section is kept as the document gave it: rendered back
// with the scenario, decoded by the testbed, and refused with its line
// when no testbed of the catalog takes it.
func TestSections(t *testing.T) {
	doc := "testbed: local\nmethods: [native]\ncluster:\n  nodes: [a, b]\n  zone: eu\n"
	s, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.SectionKeys(); len(got) != 1 || got[0] != "cluster" || !s.Remote() {
		t.Fatalf("sections %v, remote %v: want cluster, a remote scenario", got, s.Remote())
	}
	var c struct {
		Nodes []string `yaml:"nodes"`
		Zone  string   `yaml:"zone"`
	}
	if err := s.Section("cluster").Decode(&c); err != nil || len(c.Nodes) != 2 || c.Zone != "eu" {
		t.Errorf("decoded %+v, %v", c, err)
	}
	var strict struct {
		Nodes []string `yaml:"nodes"`
	}
	if err := s.Section("cluster").Decode(&strict); err == nil || !strings.Contains(err.Error(), `[5:3] unknown field "zone"`) {
		t.Errorf("decoding into a type without zone: %v, want the field and its line", err)
	}
	again, err := scenario.Parse([]byte(s.YAML()))
	if err != nil || !again.Section("cluster").Equal(s.Section("cluster")) {
		t.Errorf("round trip of\n%s: %v", s.YAML(), err)
	}
	s, err = scenario.Parse([]byte("cluster:\n"))
	if err != nil || s.Section("cluster") == nil || s.Section("cluster").Decode(&c) != nil || !strings.Contains(s.YAML(), "cluster: {}") {
		t.Errorf("an empty section: %v, rendered\n%s", err, s.YAML())
	}
	if again, err := scenario.Parse([]byte(s.YAML())); err != nil || !again.Section("cluster").Equal(s.Section("cluster")) {
		t.Errorf("\"cluster:\" and its stored \"cluster: {}\" differ: %v", err)
	}
	// A testbed without a section (local's) takes no section keyed "".
	s, err = scenario.Parse([]byte("methods: [native]\n\"\":\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err == nil || !strings.Contains(err.Error(), `unknown field ""`) {
		t.Errorf("a section keyed \"\": %v, want it refused", err)
	}
	s, err = scenario.Parse([]byte("methods: [native]\nclustr:\n  nodes: [a]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(catalog{}); err == nil || !strings.Contains(err.Error(), `scenario: [2:1] unknown field "clustr"`) {
		t.Errorf("a section no testbed takes: %v, want it refused with its line", err)
	}
}
