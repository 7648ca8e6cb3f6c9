package ebpftun_test

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tunbench/tunbench/internal/ebpf"
	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/ebpftun"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the recorded set-ups")

// attachArgs, detachArgs and putRulesArgs have the fields of the ebpf
// ops' arguments (gob matches them by name).
type attachArgs struct {
	PinDir string
	Dev    string
	Rules  []ebpf.Rule
	Decaps []ebpf.Decap
}

type detachArgs struct{ PinDir, Dev string }

// ruleText is a rule as the recorded lines write it.
func ruleText(r ebpf.Rule) string {
	s := fmt.Sprintf("rule %d %s -> %s from %s %s vni %d", r.ID, r.Dst, r.Remote, r.Local, r.Encap, r.VNI)
	if r.GREKey {
		s += " key"
	}
	if r.SrcPortMin != 0 || r.SrcPortMax != 0 {
		s += fmt.Sprintf(" sport %d-%d", r.SrcPortMin, r.SrcPortMax)
	}
	return s
}

// answerEBPF makes r answer the ebpf ops as the host would, writing what
// they load, attach and fill as lines.
func answerEBPF(r *testbedtest.Recorder) {
	testbedtest.AnswerOp(r, "ebpf.probe", func(struct{ FamilyChange bool }) (string, string, error) { return "", "", nil })
	testbedtest.AnswerOp(r, "ebpf.attach", func(a attachArgs) (string, []time.Duration, error) {
		lines := []string{fmt.Sprintf("ebpf attach dev %s pins %s", a.Dev, a.PinDir)}
		for _, rl := range a.Rules {
			lines = append(lines, "  "+ruleText(rl))
		}
		for _, d := range a.Decaps {
			lines = append(lines, fmt.Sprintf("  decap %d %s vni %d", d.ID, d.Encap, d.VNI))
		}
		return strings.Join(lines, "\n"), make([]time.Duration, len(a.Rules)), nil
	})
	testbedtest.AnswerOp(r, "ebpf.detach", func(a detachArgs) (string, struct{}, error) {
		return fmt.Sprintf("ebpf detach dev %s pins %s", a.Dev, a.PinDir), struct{}{}, nil
	})
}

// TestEBPFPlans sets every ebpf method up and tears it down on two
// recording endpoints, with one tunnel and with three (the tunnels
// dimension: the peer's rule and two fillers in each side's map, nothing
// else), in each family, and compares what it did with
// testdata/<method>-<family>[-tunnels3].golden (rewrite with -update).
func TestEBPFPlans(t *testing.T) {
	t.Parallel()
	for _, m := range ebpfMethods() {
		for _, family := range m.Families() {
			for _, n := range []int{1, 3} {
				name := m.Name() + "-" + family
				if n > 1 {
					name += fmt.Sprintf("-tunnels%d", n)
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					rec := methodtest.RecordEnv(m, family, nil)
					rec.Env.Tunnels = n
					answerEBPF(rec.A)
					answerEBPF(rec.B)
					lines := methodtest.Record(t, m, rec)
					var split []string
					for _, l := range lines {
						split = append(split, strings.Split(l, "\n")...)
					}
					testbedtest.Golden(t, name, split, *update)
				})
			}
		}
	}
	// ebpf-vxlan with decap=device: no decap entry, a collect_md device.
	for _, family := range ebpftun.EBPFVXLAN.Families() {
		name := "ebpf-vxlan-" + family + "-decap-device"
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := methodtest.RecordEnv(ebpftun.EBPFVXLAN, family, map[string]string{"decap": "device"})
			answerEBPF(rec.A)
			answerEBPF(rec.B)
			var split []string
			for _, l := range methodtest.Record(t, ebpftun.EBPFVXLAN, rec) {
				split = append(split, strings.Split(l, "\n")...)
			}
			testbedtest.Golden(t, name, split, *update)
		})
	}
}

// TestEBPFScaleRefused: a tunnel count above what an ebpf method's map
// or filler block holds is refused by the scenario's validation, before
// anything is created, naming the bound; the former option rules is
// refused with what to give instead; so is a decap value ebpf-vxlan does
// not have, naming the field and the values.
func TestEBPFScaleRefused(t *testing.T) {
	cat := method.Catalog{R: method.NewRegistry(ebpftun.EBPFGeneve, ebpftun.EBPFIPIP, ebpftun.EBPFVXLAN)}
	for _, tt := range []struct {
		methods  []string
		families []string
		tunnels  []int
		opts     map[string]map[string]string
		want     string
	}{
		{[]string{"ebpf-geneve"}, []string{"ipv4"}, []int{1, 40000}, nil,
			"tunnels: 40000: ebpf-geneve over ipv4 sets up at most 32767 (one tunnel is one rule; the IPv4 filler rules fit 32766 host prefixes in 198.19.0.0/17 beside the peer's (ipv6 takes more)): lower tunnels to 32767 or drop ebpf-geneve"},
		{[]string{"ebpf-ipip"}, []string{"ipv4"}, []int{32768}, nil, "ebpf-ipip over ipv4 sets up at most 32767"},
		{[]string{"ebpf-vxlan"}, []string{"ipv4"}, []int{1}, map[string]map[string]string{"ebpf-vxlan": {"decap": "xdp"}},
			`options.ebpf-vxlan: ebpf-vxlan: option decap="xdp": want one of tc, device (tunbench methods --options ebpf-vxlan lists them)`},
		{[]string{"ebpf-geneve"}, []string{"ipv6"}, []int{10000}, map[string]map[string]string{"ebpf-geneve": {"rules": "10000"}},
			`ebpf-geneve: option "rules" is gone: the number of rules is the tunnels dimension now: give tunnels: [N] in the scenario (or --tunnels N) instead of options: {ebpf-geneve: {rules: N}}`},
	} {
		s := scenario.Default()
		s.Methods, s.Families, s.Tunnels, s.Options = tt.methods, tt.families, tt.tunnels, tt.opts
		err := s.Validate(cat)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v %v tunnels %v options %v: %v, want an error containing %q", tt.methods, tt.families, tt.tunnels, tt.opts, err, tt.want)
		}
	}
	s := scenario.Default()
	s.Methods, s.Families, s.Tunnels = []string{"ebpf-geneve"}, []string{"ipv6"}, []int{1, 10000, 100000}
	if err := s.Validate(cat); err != nil {
		t.Errorf("ebpf-geneve over ipv6 at 1, 10000, 100000 rules refused: %v", err)
	}
}

// TestEBPFTunnels100 sets every ebpf method up with 100 tunnels on the
// host (its kernel runs them all): each side's map holds the peer's rule
// and 99 fillers, read back from the pinned map through the endpoint;
// the measured tunnel carries a ping (the fillers carry nothing by
// design: their addresses exist nowhere); Grow writes rule 101 on both
// sides while the tunnel runs; teardown leaves the links as they were
// (SetupTunnels).
func TestEBPFTunnels100(t *testing.T) {
	const n = 100
	for _, m := range ebpfMethods() {
		for _, family := range m.Families() {
			t.Run(m.Name()+"/"+family, func(t *testing.T) {
				requireEBPF(t)
				requireFamilyChange(t, m, family)
				l, env, path := methodtest.SetupTunnels(t, m, family, 1500, n, nil)
				if len(path.Adds) != 2*n {
					t.Errorf("Path.Adds: %d durations, want one per rule per side (%d)", len(path.Adds), 2*n)
				}
				ctx := context.Background()
				rulesOf := func() map[string][]ebpf.RuleStats {
					out := map[string][]ebpf.RuleStats{}
					for _, ep := range env.Endpoints() {
						s, err := ebpftun.Stats(ctx, ep, filepath.Join(ebpf.PinRoot, env.Prefix+"-"+ep.Side))
						if err != nil {
							t.Fatal(err)
						}
						out[ep.Side] = s.Rules
					}
					return out
				}
				for side, rules := range rulesOf() {
					ids := map[uint32]bool{}
					for _, r := range rules {
						ids[r.ID] = true
					}
					if len(rules) != n || !ids[1] || !ids[n] {
						t.Errorf("%s: %d rules in the map (IDs 1 %v, %d %v), want %d: the peer's and %d fillers", side, len(rules), ids[1], n, ids[n], n, n-1)
					}
				}
				methodtest.Ping(t, l, path)
				for side, rules := range rulesOf() {
					i := slices.IndexFunc(rules, func(r ebpf.RuleStats) bool { return r.ID == 1 })
					if i < 0 || rules[i].Counters.Packets == 0 {
						t.Errorf("%s: the measured rule counted no packet after a ping", side)
					}
				}
				g, ok := method.Method(m).(method.Grower)
				if !ok {
					t.Fatalf("%s is no Grower", m.Name())
				}
				how, err := g.Grow(ctx, env)
				if err != nil {
					t.Fatalf("Grow: %v", err)
				}
				for side, rules := range rulesOf() {
					if len(rules) != n+1 {
						t.Errorf("%s after Grow (%s): %d rules, want %d", side, how, len(rules), n+1)
					}
				}
				methodtest.Ping(t, l, path)
			})
		}
	}
}

// TestEBPFMaxRulesFit: at the maximum each family declares, the filler
// addresses are all distinct and none is an overlay address (what Setup
// writes fits).
func TestEBPFMaxRulesFit(t *testing.T) {
	for _, family := range []string{method.IPv4, method.IPv6} {
		s := ebpftun.EBPFGeneve.Scale(family, method.Values{})
		if family == method.IPv6 {
			// The overlay /64 holds far more fillers than the map.
			if s.Max != ebpf.DefaultMaxRules {
				t.Errorf("ipv6 max %d, want the map's %d", s.Max, ebpf.DefaultMaxRules)
			}
			continue
		}
		fillers := ebpftun.FillerRules(family, s.Max-1, ebpf.Rule{})
		if len(fillers) != s.Max-1 {
			t.Errorf("%s: %d fillers at the maximum %d, want %d", family, len(fillers), s.Max, s.Max-1)
		}
		seen := map[netip.Prefix]bool{}
		for _, r := range fillers {
			if seen[r.Dst] {
				t.Fatalf("%s: filler %s twice", family, r.Dst)
			}
			seen[r.Dst] = true
		}
	}
}
