package plan_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/scenario"
)

type overheads struct{}

func (overheads) Overhead(m, f string) int {
	switch {
	case m == "vxlan" && f == "ipv6":
		return 70
	case m == "vxlan":
		return 50
	case m == "ipip":
		return 20
	}
	return 0
}

func (overheads) Families(m string) []string {
	if m == "ipip" {
		return []string{"ipv4"}
	}
	return []string{"ipv4", "ipv6"}
}

func TestInterleavedPlan(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"native", "vxlan"}
	s.MTUs = []int{1500, 9000}
	s.Repetitions = 2
	want := []string{
		"1/8 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 cc=cubic rep=1",
		"2/8 native family=ipv4 mtu=9000 overlay_mtu=9000 offloads=on streams=1 cc=cubic rep=1",
		"3/8 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=on streams=1 cc=cubic rep=1",
		"4/8 vxlan family=ipv4 mtu=9000 overlay_mtu=8950 offloads=on streams=1 cc=cubic rep=1",
		"5/8 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 cc=cubic rep=2",
		"6/8 native family=ipv4 mtu=9000 overlay_mtu=9000 offloads=on streams=1 cc=cubic rep=2",
		"7/8 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=on streams=1 cc=cubic rep=2",
		"8/8 vxlan family=ipv4 mtu=9000 overlay_mtu=8950 offloads=on streams=1 cc=cubic rep=2",
	}
	if diff := cmp.Diff(want, plan.Lines(plan.Build(s, overheads{}))); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

func TestGroupedPlanSkipsUnsupportedFamilies(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"ipip", "vxlan"}
	s.Families = []string{"ipv4", "ipv6"}
	s.Offloads = []string{"off"}
	s.Repetitions = 2
	s.Order = "grouped"
	want := []string{
		"1/6 ipip family=ipv4 mtu=1500 overlay_mtu=1480 offloads=off streams=1 cc=cubic rep=1",
		"2/6 ipip family=ipv4 mtu=1500 overlay_mtu=1480 offloads=off streams=1 cc=cubic rep=2",
		"3/6 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=off streams=1 cc=cubic rep=1",
		"4/6 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=off streams=1 cc=cubic rep=2",
		"5/6 vxlan family=ipv6 mtu=1500 overlay_mtu=1430 offloads=off streams=1 cc=cubic rep=1",
		"6/6 vxlan family=ipv6 mtu=1500 overlay_mtu=1430 offloads=off streams=1 cc=cubic rep=2",
	}
	steps := plan.Build(s, overheads{})
	if diff := cmp.Diff(want, plan.Lines(steps)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if steps[0].Key != steps[1].Key || steps[1].Key == steps[2].Key {
		t.Errorf("keys must group repetitions of one cell: %q %q %q", steps[0].Key, steps[1].Key, steps[2].Key)
	}
	if got := steps[0].Measured(); got != 10+1+3 {
		t.Errorf("Measured() = %v, want 14 (duration + omit + latency)", got)
	}
}

// TestTunnelsDimension: each tunnel count is a cell of its own, its key
// and line naming the count above one, one tunnel written as before.
func TestTunnelsDimension(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"vxlan"}
	s.Tunnels = []int{1, 100}
	s.Repetitions = 1
	steps := plan.Build(s, overheads{})
	want := []string{
		"1/2 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=on streams=1 cc=cubic rep=1",
		"2/2 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=on streams=1 tunnels=100 cc=cubic rep=1",
	}
	if diff := cmp.Diff(want, plan.Lines(steps)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if got := []string{steps[0].Key, steps[1].Key}; got[0] == got[1] || !strings.HasSuffix(got[1], "/tunnels100/cc-cubic") {
		t.Errorf("keys %q: want distinct, the second naming tunnels100", got)
	}
	if steps[0].Params.Tunnels != 0 || steps[1].Params.Tunnels != 100 {
		t.Errorf("params' tunnels %d and %d, want 0 (one) and 100", steps[0].Params.Tunnels, steps[1].Params.Tunnels)
	}
}

// scaleCatalog is overheads with the methods' scale: vxlan sets up many
// tunnels, the rest one.
type scaleCatalog struct{ overheads }

func (scaleCatalog) Names() []string                              { return []string{"native", "vxlan", "ipip"} }
func (scaleCatalog) CheckOptions(string, map[string]string) error { return nil }
func (scaleCatalog) Tunnels(m, _ string, _ map[string]string) (int, string, string) {
	switch m {
	case "vxlan":
		return 16384, "VXLAN device", "the address plan"
	case "wireguard-go":
		return 16384, "peer", "the address plan"
	}
	return 1, "tunnel", m + " sets up one tunnel"
}

// TunnelCost: a VXLAN device 4 ms, a peer 1 ms to set up and tear down.
func (scaleCatalog) TunnelCost(m, _ string, _ map[string]string) float64 {
	if m == "vxlan" {
		return 0.004
	}
	return 0.001
}

// TestOneTunnelMethodsAtOneOnly: in a sweep of tunnel counts, a method
// that sets up one tunnel (native, the baseline) runs at 1 only, as a
// family a method lacks is left out.
func TestOneTunnelMethodsAtOneOnly(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"native", "vxlan"}
	s.Tunnels = []int{1, 100}
	s.Repetitions = 1
	if err := s.Validate(scaleCatalog{}); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want := []string{
		"1/3 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 cc=cubic rep=1",
		"2/3 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=on streams=1 cc=cubic rep=1",
		"3/3 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=on streams=1 tunnels=100 cc=cubic rep=1",
	}
	if diff := cmp.Diff(want, plan.Lines(plan.Build(s, scaleCatalog{}))); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
}

// TestSpreadInLineAndKey: spread is named in the line and the key of a
// parallel test's cells when set; without the parallel test, or unset,
// nothing changes.
func TestSpreadInLineAndKey(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"vxlan"}
	s.Tunnels = []int{4}
	s.Streams = []int{4}
	s.StreamsPerProcess = 1
	s.Tests = []string{scenario.TestParallel}
	s.Repetitions = 1
	plain := plan.Build(s, overheads{})
	s.Spread = true
	spread := plan.Build(s, overheads{})
	want := []string{"1/1 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=on streams=4 tunnels=4 spread=on cc=cubic rep=1"}
	if diff := cmp.Diff(want, plan.Lines(spread)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if got := spread[0].Key; !strings.HasSuffix(got, "/p4/tunnels4/spread/cc-cubic") || !spread[0].Params.Spread {
		t.Errorf("key %q, params' spread %v: want /p4/tunnels4/spread/cc-cubic and true", got, spread[0].Params.Spread)
	}
	if got := plan.Lines(plain)[0]; strings.Contains(got, "spread") || strings.Contains(plain[0].Key, "spread") || plain[0].Params.Spread {
		t.Errorf("without spread: line %q, key %q, params' spread %v: want none", got, plain[0].Key, plain[0].Params.Spread)
	}
	if plain[0].Key == spread[0].Key {
		t.Errorf("spread and not share key %q", plain[0].Key)
	}
}
