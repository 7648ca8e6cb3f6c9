package fou_test

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/fou"
	"github.com/tunbench/tunbench/internal/method/methodtest"
	"github.com/tunbench/tunbench/internal/scenario"
	"github.com/tunbench/tunbench/internal/testbed/testbedtest"
)

// TestTunnelsPlans sets fou and gue up with payload gre and three
// tunnels, and tears them down, on two recording endpoints, in each
// family, and compares what they did with
// testdata/<method>-<family>-gre-tunnels3.golden (rewrite with -update):
// one receive port, the middle tunnel the single tunnel's device, the
// others keyed devices with ScaleOverlay's addresses.
func TestTunnelsPlans(t *testing.T) {
	t.Parallel()
	for _, m := range methods() {
		for _, fam := range m.Families() {
			name := m.Name() + "-" + fam + "-gre-tunnels3"
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				rec := methodtest.RecordEnv(m, fam, map[string]string{"payload": "gre"})
				rec.Env.Tunnels = 3
				answerOps(rec.A)
				answerOps(rec.B)
				testbedtest.Golden(t, name, methodtest.Record(t, m, rec), *update)
			})
		}
	}
}

// TestTunnelsAddsAndGrow: a scaled Setup times each tunnel's add on each
// side, Grow adds tunnel N on both sides and Teardown removes it with the
// others; with payload ipip Setup and Grow refuse a second tunnel before
// creating anything.
func TestTunnelsAddsAndGrow(t *testing.T) {
	t.Parallel()
	for _, m := range methods() {
		t.Run(m.Name(), func(t *testing.T) {
			rec := methodtest.RecordEnv(m, method.IPv4, map[string]string{"payload": "gre"})
			rec.Env.Tunnels = 3
			answerOps(rec.A)
			answerOps(rec.B)
			path, err := m.Setup(t.Context(), rec.Env)
			if err != nil {
				t.Fatal(err)
			}
			if len(path.Adds) != 6 {
				t.Errorf("%d adds timed, want 3 per side", len(path.Adds))
			}
			rec.A.Lines()
			rec.B.Lines()
			if _, err := m.(method.Grower).Grow(t.Context(), rec.Env); err != nil {
				t.Fatalf("Grow: %v", err)
			}
			grown := methodtest.RecordPrefix + "-" + m.Name()[:2] + "0003"
			for _, r := range []*testbedtest.Recorder{rec.A, rec.B} {
				if lines := strings.Join(r.Lines(), "\n"); !strings.Contains(lines, "ip link add "+grown+" type gre") || !strings.Contains(lines, "key 4") {
					t.Errorf("Grow did:\n%s\nwant %s with key 4", lines, grown)
				}
			}
			if err := m.Teardown(t.Context(), rec.Env); err != nil {
				t.Fatal(err)
			}
			if lines := strings.Join(rec.A.Lines(), "\n"); !strings.Contains(lines, "ip link del "+grown) {
				t.Errorf("teardown after Grow:\n%s\nwant %s deleted", lines, grown)
			}

			rec = methodtest.RecordEnv(m, method.IPv4, nil)
			rec.Env.Tunnels = 2
			answerOps(rec.A)
			answerOps(rec.B)
			if _, err := m.Setup(t.Context(), rec.Env); err == nil || !strings.Contains(err.Error(), "payload gre gives each tunnel a GRE key") {
				t.Errorf("payload ipip with 2 tunnels: %v, want a refusal naming payload gre", err)
			}
			if lines := append(rec.A.Lines(), rec.B.Lines()...); len(lines) != 0 {
				t.Errorf("a refused Setup changed the hosts: %q", lines)
			}
			rec.Env.Tunnels = 1
			if _, err := m.(method.Grower).Grow(t.Context(), rec.Env); err == nil || !strings.Contains(err.Error(), "at most 1") {
				t.Errorf("payload ipip Grow: %v, want a refusal", err)
			}
		})
	}
}

// TestTunnelsRefused: counts above the maximum are refused by the
// scenario's validation, naming what one tunnel is and the fix; a
// payload that sets up one tunnel only is refused in a sweep without 1
// (with 1 it runs at 1 only, scenario.OneTunnelOnly).
func TestTunnelsRefused(t *testing.T) {
	cat := method.Catalog{R: method.NewRegistry(fou.FOU{}, fou.GUE{})}
	for _, tt := range []struct {
		m, family, payload string
		n                  int
		want               string
	}{
		{"fou", "ipv4", "ipip", 2, "tunnels: [2]: fou over ipv4 sets up one tunnel only (the kernel tells ipip tunnels apart by their outer addresses alone, which every device over fou shares: payload gre gives each tunnel a GRE key of its own)"},
		{"gue", "ipv6", "ipip", 10, "tunnels: [10]: gue over ipv6 sets up one tunnel only (the kernel tells ip6tnl tunnels apart"},
		{"gue", "ipv4", "gre", 16385, "gue over ipv4 sets up at most 16384 (one tunnel is one gre device in gue with its own GRE key; the IPv4 address plan"},
	} {
		s := scenario.Default()
		s.Methods = []string{tt.m}
		s.Families = []string{tt.family}
		s.Options = map[string]map[string]string{tt.m: {"payload": tt.payload}}
		s.Tunnels = []int{1, tt.n}
		if tt.payload == "ipip" {
			s.Tunnels = []int{tt.n}
		}
		if err := s.Validate(cat); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %s payload %s tunnels %d: %v, want an error containing %q", tt.m, tt.family, tt.payload, tt.n, err, tt.want)
		}
	}
}
