package registry_test

import (
	"strings"
	"testing"

	"github.com/tunbench/tunbench/internal/method"
	"github.com/tunbench/tunbench/internal/method/registry"
)

// TestOneTunnelMethodsSayWhy: the methods that set up one tunnel say so
// in their own folder (method.Scaler), with what one tunnel is for them
// and a reason of their own, which "tunbench methods --options" shows
// and a refused --tunnels quotes; not the default that names no reason.
func TestOneTunnelMethodsSayWhy(t *testing.T) {
	reg := registry.Builtin()
	for _, name := range []string{"native", "openvpn", "ssh-tunnel", "nebula", "tailscale", "macsec", "pod-network"} {
		m, err := reg.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(method.Scaler); !ok {
			t.Errorf("%s is not a method.Scaler: say what one tunnel is and why it sets up no more", name)
			continue
		}
		for _, f := range m.Families() {
			vals, err := method.ParseOptions(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := method.ScaleOf(m, f, vals)
			if s.Max != 1 || s.Unit == "" || s.Unit == "tunnel" || len(s.Why) < 40 || !strings.Contains(s.Why, name) {
				t.Errorf("%s over %s: %+v: want a maximum of 1, its own unit and a reason naming it", name, f, s)
			}
		}
	}
}

// TestScaleDeclared: every method's scale, in every family it carries,
// is at least one tunnel, and says what one tunnel is and what bounds
// it (a maximum above scenario.MaxTunnels is fine: the scenario's bound
// then applies).
func TestScaleDeclared(t *testing.T) {
	for _, m := range registry.Builtin().All() {
		vals, err := method.ParseOptions(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m.Families() {
			s := method.ScaleOf(m, f, vals)
			if s.Max < 1 || s.Unit == "" || s.Why == "" {
				t.Errorf("%s over %s: %+v: want at least one tunnel, a unit and a reason", m.Name(), f, s)
			}
		}
	}
}
