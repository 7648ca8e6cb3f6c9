package plan_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tunbench/tunbench/internal/plan"
	"github.com/tunbench/tunbench/internal/scenario"
)

func TestDirectionAndMSSDimensions(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"native"}
	s.Directions = []string{"forward", "reverse"}
	s.MSS = []int{1220, 216}
	s.Repetitions = 1
	steps := plan.Build(s, overheads{})
	want := []string{
		"1/4 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 mss=1220 cc=cubic rep=1",
		"2/4 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 mss=216 cc=cubic rep=1",
		"3/4 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 direction=reverse mss=1220 cc=cubic rep=1",
		"4/4 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 direction=reverse mss=216 cc=cubic rep=1",
	}
	if diff := cmp.Diff(want, plan.Lines(steps)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	keys := map[string]bool{}
	for _, st := range steps {
		keys[st.Key] = true
	}
	if len(keys) != 4 {
		t.Errorf("keys not distinct: %v", keys)
	}
	if steps[3].Key != "native/ipv4/mtu1500/offloads-on/p1/reverse/mss216/cc-cubic" {
		t.Errorf("key = %s", steps[3].Key)
	}
}

// Seed 000's 10 runs of 100 s per method: the estimate counts each test's
// load time plus the per-step overhead.
func TestEstimate(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"native", "vxlan"}
	s.Duration, s.Omit, s.Latency = "100s", "0s", "0s"
	s.Tests = []string{"tcp_stream"}
	s.Repetitions = 10
	steps := plan.Build(s, overheads{})
	if got, want := plan.Estimate(steps), 20*(100+plan.StepOverhead); got != want {
		t.Errorf("Estimate = %v s, want %v", got, want)
	}
	if got := len(plan.Cells(steps)); got != 2 {
		t.Errorf("Cells = %d, want 2", got)
	}
}

// bigScenario expands to 10,080 cells (one repetition): 2 methods x 2
// families x 5 MTUs x 2 offload states x 3 directions x 84 stream counts.
func bigScenario() scenario.Scenario {
	s := scenario.Default()
	s.Methods = []string{"native", "vxlan"}
	s.Families = []string{"ipv4", "ipv6"}
	s.MTUs = []int{1500, 4000, 9000, 1400, 2000}
	s.Offloads = []string{"on", "off"}
	s.Directions = []string{"forward", "reverse", "bidir"}
	s.Tests = []string{"parallel", "tcp_rr"}
	s.MSS = nil
	s.Streams = nil
	for i := 1; len(s.Streams) < 10000/(2*2*5*2*3)+1; i++ {
		s.Streams = append(s.Streams, i)
	}
	s.Repetitions = 1
	return s
}

func TestBigScenarioSize(t *testing.T) {
	s := bigScenario()
	if err := s.Validate(catalog{}); err != nil {
		t.Fatal(err)
	}
	if n := len(plan.Build(s, overheads{})); n < 10000 {
		t.Fatalf("big scenario has %d cells, want at least 10,000", n)
	}
}

// BenchmarkExpandValidate10k: docs/performance.md records it (target
// 100 ms or less for 10,000 cells).
func BenchmarkExpandValidate10k(b *testing.B) {
	s := bigScenario()
	for b.Loop() {
		if err := s.Validate(catalog{}); err != nil {
			b.Fatal(err)
		}
		steps := plan.Build(s, overheads{})
		if len(steps) < 10000 {
			b.Fatal(fmt.Sprint(len(steps)))
		}
	}
}

type catalog struct{ overheads }

func (catalog) Names() []string                              { return []string{"native", "vxlan", "ipip"} }
func (catalog) CheckOptions(string, map[string]string) error { return nil }

// A named offload set is a value of the offloads dimension: it keeps the
// offloads on and carries its features.
func TestOffloadSets(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"vxlan"}
	s.Offloads = []string{"on", "udp-tnl-seg-off", "mine"}
	s.OffloadSets = map[string]map[string]string{"mine": {"rx-gro": "off"}}
	s.Repetitions = 1
	if err := s.Validate(catalog{}); err != nil {
		t.Fatal(err)
	}
	steps := plan.Build(s, overheads{})
	want := []string{
		"1/3 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=on streams=1 cc=cubic rep=1",
		"2/3 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=udp-tnl-seg-off streams=1 cc=cubic rep=1",
		"3/3 vxlan family=ipv4 mtu=1500 overlay_mtu=1450 offloads=mine streams=1 cc=cubic rep=1",
	}
	if diff := cmp.Diff(want, plan.Lines(steps)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	p := steps[1].Params
	if !p.Offloads || p.OffloadSet != "udp-tnl-seg-off" || p.OffloadFeatures["tx-udp_tnl-csum-segmentation"] != false || len(p.OffloadFeatures) != 2 {
		t.Errorf("params %+v", p)
	}
	if steps[2].Params.OffloadFeatures["rx-gro"] != false || steps[2].Key != "vxlan/ipv4/mtu1500/offloads-mine/p1/cc-cubic" {
		t.Errorf("custom set: %+v %s", steps[2].Params.OffloadFeatures, steps[2].Key)
	}
	s.Offloads = []string{"turbo"}
	if err := s.Validate(catalog{}); err == nil || !strings.Contains(err.Error(), `unknown value "turbo": use on, off (TSO/GSO/GRO on the path) or a feature set: gro-off, gso-off, mine, tso-off, udp-tnl-seg-off, udp-tnl-seg-on`) {
		t.Errorf("unknown set: %v", err)
	}
}

// TestCongestionControlDimension: cubic is the local default; a list is a
// dimension whose value is in every cell's key; on ssh the default leaves
// the hosts' own algorithm (no cc in the key).
func TestCongestionControlDimension(t *testing.T) {
	s := scenario.Default()
	s.Methods = []string{"native"}
	s.Repetitions = 1
	if got := plan.Lines(plan.Build(s, overheads{})); len(got) != 1 || !strings.HasSuffix(got[0], " cc=cubic rep=1") {
		t.Errorf("default plan %q, want cubic", got)
	}
	s.CongestionControl = []string{"cubic", "bbr"}
	steps := plan.Build(s, overheads{})
	want := []string{
		"1/2 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 cc=cubic rep=1",
		"2/2 native family=ipv4 mtu=1500 overlay_mtu=1500 offloads=on streams=1 cc=bbr rep=1",
	}
	if diff := cmp.Diff(want, plan.Lines(steps)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if steps[1].Key != "native/ipv4/mtu1500/offloads-on/p1/cc-bbr" || steps[1].Params.CongestionControl != "bbr" {
		t.Errorf("cell %s with %q", steps[1].Key, steps[1].Params.CongestionControl)
	}
	s.CongestionControl = nil
	s.Testbed = "ssh"
	var err error
	if s, err = s.WithSection("ssh", map[string]any{}); err != nil { // a remote scenario names its hosts
		t.Fatal(err)
	}
	if ccs := s.CongestionControls(); len(ccs) != 1 || ccs[0] != "" {
		t.Errorf("ssh default %q, want the hosts' own", ccs)
	}
}
